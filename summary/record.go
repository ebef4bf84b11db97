package summary

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// TFRecord framing, the container of TensorBoard's event files. Each
// record is
//
//	uint64  length of the data, little-endian
//	uint32  masked CRC-32C of those 8 length bytes
//	[length]byte data
//	uint32  masked CRC-32C of the data
//
// where mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. The mask exists
// because a CRC of data that itself holds CRCs is weak; it is TFRecord's
// rule and every reader applies it.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	crcMaskDelta = 0xa282ead8
	headerSize   = 12 // length and its CRC
	footerSize   = 4  // the data's CRC

	// MaxRecordSize bounds the length a reader accepts. Event records
	// are small (a histogram is a few kilobytes); a larger length is
	// corruption, and believing it would let a damaged file make the
	// reader allocate without bound.
	MaxRecordSize = 64 << 20
)

// maskedCRC is TFRecord's masked CRC-32C of b.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + crcMaskDelta
}

// appendRecord appends data framed as one TFRecord to buf.
func appendRecord(buf, data []byte) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint64(h[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(h[8:], maskedCRC(h[:8]))
	buf = append(buf, h[:]...)
	buf = append(buf, data...)
	return binary.LittleEndian.AppendUint32(buf, maskedCRC(data))
}

// RecordError describes a damaged record: where it starts in the file and
// what is wrong with it.
type RecordError struct {
	// Offset is the byte offset of the record's start.
	Offset int64
	// Msg says what is wrong.
	Msg string

	torn bool
}

func (e *RecordError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg) }

// Unwrap returns ErrTornRecord for a torn record, nil for other damage.
func (e *RecordError) Unwrap() error {
	if e.torn {
		return ErrTornRecord
	}
	return nil
}

// ErrTornRecord is what a RecordError for a record cut short by the end
// of the data unwraps to (errors.Is): the last record of a file whose
// writer is still appending or was killed mid-write.
var ErrTornRecord = errors.New("record cut short by the end of the file (torn tail)")

// RecordReader reads the TFRecord records of one file held in memory,
// skipping damaged ones. Next returns each good record's data; the damage
// it stepped over is in Skipped.
//
// After a record whose length CRC does not match, the reader cannot trust
// the length, so it searches forward, byte by byte, for the next offset
// where 12 bytes form a valid header and resumes there: one flipped bit
// costs one record, not the rest of the file.
type RecordReader struct {
	data []byte
	off  int
	// Skipped lists the damage stepped over so far, in file order.
	Skipped []*RecordError
	// Torn is set when the data ends inside a record; End is then the
	// offset where that record starts (the end of the whole records).
	Torn bool
}

// NewRecordReader returns a reader over data, the contents of an event
// file (or its prefix, while a writer appends).
func NewRecordReader(data []byte) *RecordReader { return &RecordReader{data: data} }

// End is the offset just past the last whole record read so far, or
// where a torn tail begins: where a reader following a growing file
// resumes.
func (r *RecordReader) End() int64 { return int64(r.off) }

// Next returns the next good record's data (a sub-slice of the file's
// bytes) and its offset, or io.EOF at the end. Damaged records are
// skipped and listed in Skipped; Next never fails otherwise.
func (r *RecordReader) Next() (data []byte, offset int64, err error) {
	for {
		start := r.off
		rest := r.data[start:]
		if len(rest) == 0 {
			return nil, 0, io.EOF
		}
		if len(rest) < headerSize {
			r.torn(start)
			return nil, 0, io.EOF
		}
		n := binary.LittleEndian.Uint64(rest[:8])
		if binary.LittleEndian.Uint32(rest[8:12]) != maskedCRC(rest[:8]) {
			next := r.resync(start + 1)
			r.skip(start, fmt.Sprintf("length CRC mismatch; skipped %d bytes to the next valid record header", next-start))
			r.off = next
			continue
		}
		if n > MaxRecordSize {
			next := r.resync(start + 1)
			r.skip(start, fmt.Sprintf("record length %d exceeds the %d-byte limit; skipped %d bytes", n, MaxRecordSize, next-start))
			r.off = next
			continue
		}
		total := headerSize + int(n) + footerSize
		if len(rest) < total {
			r.torn(start)
			return nil, 0, io.EOF
		}
		body := rest[headerSize : headerSize+int(n)]
		if binary.LittleEndian.Uint32(rest[headerSize+int(n):total]) != maskedCRC(body) {
			// The length was sound (its CRC matched), so the next record
			// starts right after this one.
			r.skip(start, fmt.Sprintf("data CRC mismatch in a %d-byte record; record skipped", n))
			r.off = start + total
			continue
		}
		r.off = start + total
		return body, int64(start), nil
	}
}

func (r *RecordReader) skip(off int, msg string) {
	r.Skipped = append(r.Skipped, &RecordError{Offset: int64(off), Msg: msg})
}

func (r *RecordReader) torn(off int) {
	r.Torn = true
	r.off = off
	r.Skipped = append(r.Skipped, &RecordError{Offset: int64(off), Msg: fmt.Sprintf("%v (%d bytes)", ErrTornRecord, len(r.data)-off), torn: true})
	// Stay at the torn record: End reports where it starts, and a later
	// Next on the same data reports nothing more.
	r.data = r.data[:off]
}

// resync returns the first offset at or after from where a valid record
// header (length with a matching masked CRC, within MaxRecordSize) starts,
// or the end of the data when there is none. A random 12 bytes pass the
// check with probability 2^-32, so a false match is rare, and then costs
// only a skipped data CRC.
func (r *RecordReader) resync(from int) int {
	for i := from; i+headerSize <= len(r.data); i++ {
		h := r.data[i : i+headerSize]
		if binary.LittleEndian.Uint32(h[8:]) == maskedCRC(h[:8]) && binary.LittleEndian.Uint64(h[:8]) <= MaxRecordSize {
			return i
		}
	}
	return len(r.data)
}
