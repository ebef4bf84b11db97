package freelist

import "sync"

// List is a free list of *T. The zero List is ready to use and makes new
// objects with new(T); set New before the first Get to make them another
// way (to bind a method value once, say). A List may be used by several
// goroutines at once and must not be copied after first use.
type List[T any] struct {
	// New, when set, makes an object for Get when the list is empty.
	New func() *T

	mu   sync.Mutex
	free []*T
}

// Get returns an object put back earlier, or a new one.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		x := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return x
	}
	l.mu.Unlock()
	if l.New != nil {
		return l.New()
	}
	return new(T)
}

// Put returns x to the list for a later Get. The caller should clear any
// reference x holds to memory it does not own first, since the list keeps
// x for as long as the program runs.
func (l *List[T]) Put(x *T) {
	l.mu.Lock()
	l.free = append(l.free, x)
	l.mu.Unlock()
}
