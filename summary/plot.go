package summary

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Plot describes a line chart of one scalar series, drawn as SVG by
// pure Go: axes with rounded ticks, their labels and a title.
type Plot struct {
	// Title is drawn above the chart; XLabel and YLabel name the axes.
	Title, XLabel, YLabel string
	// Width and Height are the picture's size in pixels; zero means
	// 800×480.
	Width, Height int
}

// chart margins, in pixels: room for tick labels and axis titles.
const (
	marginLeft   = 80
	marginRight  = 24
	marginTop    = 40
	marginBottom = 56
)

// SVG draws points (a series in step order) as an SVG document. Points
// with non-finite values are left out of the line; a series with no
// finite point is drawn as empty axes that say so.
func (p Plot) SVG(points []Scalar) []byte {
	w, h := p.Width, p.Height
	if w <= 0 {
		w = 800
	}
	if h <= 0 {
		h = 480
	}
	w, h = max(w, marginLeft+marginRight+100), max(h, marginTop+marginBottom+100)
	finite := points[:0:0]
	for _, s := range points {
		if !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
			finite = append(finite, s)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="24" text-anchor="middle" font-size="16">%s</text>`+"\n", w/2, html.EscapeString(p.Title))
	x0, y0 := float64(marginLeft), float64(h-marginBottom) // the origin, bottom left
	pw, ph := float64(w-marginLeft-marginRight), float64(h-marginTop-marginBottom)

	xlo, xhi, ylo, yhi := 0.0, 1.0, 0.0, 1.0
	if len(finite) > 0 {
		xlo, xhi = float64(finite[0].Step), float64(finite[0].Step)
		ylo, yhi = finite[0].Value, finite[0].Value
		for _, s := range finite {
			xlo, xhi = min(xlo, float64(s.Step)), max(xhi, float64(s.Step))
			ylo, yhi = min(ylo, s.Value), max(yhi, s.Value)
		}
	}
	xt := niceTicks(xlo, xhi, 8)
	yt := niceTicks(ylo, yhi, 6)
	xlo, xhi = min(xlo, xt[0]), max(xhi, xt[len(xt)-1])
	ylo, yhi = min(ylo, yt[0]), max(yhi, yt[len(yt)-1])
	if xhi == xlo {
		xhi = xlo + 1
	}
	if yhi == ylo {
		yhi = ylo + 1
	}
	px := func(x float64) float64 { return x0 + (x-xlo)/(xhi-xlo)*pw }
	py := func(y float64) float64 { return y0 - (y-ylo)/(yhi-ylo)*ph }

	// Grid and ticks.
	for _, t := range yt {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x0, y, x0+pw, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, tickLabel(t))
	}
	for _, t := range xt {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x, y0, x, y0-ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y0+18, tickLabel(t))
	}
	// Axes and their titles.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0+pw, y0)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0, y0-ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+pw/2, h-14, html.EscapeString(p.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", y0-ph/2, y0-ph/2, html.EscapeString(p.YLabel))

	if len(finite) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#888">no data</text>`+"\n", x0+pw/2, y0-ph/2)
	} else {
		b.WriteString(`<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" stroke-linejoin="round" points="`)
		for i, s := range finite {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", px(float64(s.Step)), py(s.Value))
		}
		b.WriteString(`"/>` + "\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// WriteSVG draws points and writes the SVG to path atomically. path must
// end in .svg.
func (p Plot) WriteSVG(path string, points []Scalar) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	return writeFile(path, p.SVG(points))
}

// CheckPlotPath refuses a plot path whose extension is not .svg, the one
// format Plot writes.
func CheckPlotPath(path string) error {
	if strings.ToLower(filepath.Ext(path)) != ".svg" {
		return fmt.Errorf("summary: plot %s: want a .svg file", path)
	}
	return nil
}

// niceTicks returns about n evenly spaced round values (steps of 1, 2 or
// 5 times a power of ten) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1)
		lo, hi = lo-d, hi+d
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	var ticks []float64
	for i := 0; ; i++ {
		t := start + float64(i)*step
		if t > end+step/2 || i > 4*n {
			break
		}
		// Round away the float noise of the multiplication (0.30000000000000004).
		ticks = append(ticks, math.Round(t/step)*step)
	}
	return ticks
}

// tickLabel formats a tick value briefly.
func tickLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
