package pacer

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxCurvePoints bounds the points of a rate curve file.
const MaxCurvePoints = 100_000

// MaxRate bounds every rate a profile may ask for, in sends per second.
const MaxRate = 1e9

// CurveError is a problem in a rate curve file, at Line (from 1; 0 for
// the file as a whole).
type CurveError struct {
	Line int
	Msg  string
}

func (e *CurveError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// ReadCurve reads a rate curve: CSV records of seconds from the start and
// the rate at that time, in sends per second ("30,1500"). Lines starting
// with # are comments; a first record whose seconds are not a number is a
// header. The points must pass CheckCurve. Errors are *CurveError.
func ReadCurve(r io.Reader) ([]Point, error) {
	cr := csv.NewReader(r)
	cr.Comment, cr.FieldsPerRecord, cr.TrimLeadingSpace = '#', -1, true
	var points []Point
	lines := []int{}
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			return nil, &CurveError{Line: pe.Line, Msg: "not valid CSV: " + pe.Err.Error()}
		} else if err != nil {
			return nil, &CurveError{Msg: err.Error()}
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != 2 {
			return nil, &CurveError{Line: line, Msg: fmt.Sprintf("want 2 fields (seconds,rate), got %d", len(rec))}
		}
		secs, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64)
		if err != nil && first {
			continue // a header
		}
		if err != nil {
			return nil, &CurveError{Line: line, Msg: fmt.Sprintf("seconds must be a number, got %q", rec[0])}
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil {
			return nil, &CurveError{Line: line, Msg: fmt.Sprintf("rate must be a number, got %q", rec[1])}
		}
		if len(points) == MaxCurvePoints {
			return nil, &CurveError{Line: line, Msg: fmt.Sprintf("more than %d points", MaxCurvePoints)}
		}
		points, lines = append(points, Point{secs, rate}), append(lines, line)
	}
	if err := CheckCurve(points); err != nil {
		var ce *CurveError
		if errors.As(err, &ce) && ce.Line > 0 {
			ce.Line = lines[ce.Line-1]
		}
		return nil, err
	}
	return points, nil
}

// CheckCurve reports why points cannot be a rate curve, or nil: the first
// point must be at 0 seconds, times must not decrease and no time may
// appear more than twice (twice makes a step), rates must be between 0
// and MaxRate, and the last rate, which holds after the curve, must be
// positive. A *CurveError's Line is then the index of the bad point, from
// 1.
func CheckCurve(points []Point) error {
	if len(points) == 0 {
		return &CurveError{Msg: "no points: want lines of seconds,rate starting at 0 seconds"}
	}
	for j, p := range points {
		bad := func(format string, args ...any) error {
			return &CurveError{Line: j + 1, Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case math.IsNaN(p.Seconds) || math.IsInf(p.Seconds, 0) || p.Seconds < 0 || p.Seconds > 1e9:
			return bad("seconds must be between 0 and 1e9, got %v", p.Seconds)
		case j == 0 && p.Seconds != 0:
			return bad("the first point must be at 0 seconds, got %v", p.Seconds)
		case j > 0 && p.Seconds < points[j-1].Seconds:
			return bad("%v seconds comes after %v: times must not decrease", p.Seconds, points[j-1].Seconds)
		case j > 1 && p.Seconds == points[j-2].Seconds:
			return bad("%v seconds appears more than twice (twice makes a step)", p.Seconds)
		case math.IsNaN(p.Rate) || p.Rate < 0 || p.Rate > MaxRate:
			return bad("rate must be between 0 and %v, got %v", MaxRate, p.Rate)
		}
	}
	if last := points[len(points)-1]; last.Rate <= 0 {
		return &CurveError{Line: len(points), Msg: "the last rate holds after the curve's end and must be positive, got 0"}
	}
	return nil
}
