package pacer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReadCurve(t *testing.T) {
	cases := []struct {
		name, in string
		want     []Point
		err      string // the error's text, if one
	}{
		// A header, a comment, spaces and a step (two points at 10 s).
		{"full", "seconds,rate\n# warm up\n0, 100\n10,1000\n10, 50\n", []Point{{0, 100}, {10, 1000}, {10, 50}}, ""},
		// One point is a constant rate.
		{"one point", "0,5", []Point{{0, 5}}, ""},
		{"empty", "", nil, "no points"},
		{"header only", "seconds,rate\n", nil, "no points"},
		// The error names the file's line, comments counted.
		{"not a number", "0,1\n# c\n5,fast\n", nil, `line 3: rate must be a number, got "fast"`},
		{"three fields", "0,1,2\n", nil, "line 1: want 2 fields (seconds,rate), got 3"},
		{"late start", "\n\n1,100\n", nil, "line 3: the first point must be at 0 seconds, got 1"},
		{"backwards", "0,1\n5,1\n4,1\n", nil, "line 3: 4 seconds comes after 5: times must not decrease"},
		{"three at once", "0,1\n5,1\n5,2\n5,3\n", nil, "line 4: 5 seconds appears more than twice"},
		{"negative rate", "0,-1\n1,1\n", nil, "line 1: rate must be between 0 and 1e+09, got -1"},
		{"ends at zero", "0,10\n5,0\n", nil, "line 2: the last rate holds after the curve's end and must be positive"},
		{"bad quotes", "0,\"1\n", nil, "not valid CSV"},
	}
	for _, tc := range cases {
		got, err := ReadCurve(strings.NewReader(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !slices.Equal(got, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzReadCurve: any input is either a clear *CurveError or a curve that
// passes CheckCurve and whose schedule never goes back in time.
func FuzzReadCurve(f *testing.F) {
	for _, s := range []string{"0,100\n10,1000\n10,5\n", "seconds,rate\n0,1", "# x\n0,0\n1,1e9\n", "0,1\n\"2\",3", "0,1,2", "0,1e-300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		points, err := ReadCurve(strings.NewReader(in))
		if err != nil {
			var ce *CurveError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CurveError", err)
			}
			return
		}
		if err := CheckCurve(points); err != nil {
			t.Fatalf("read %v, which fails its check: %v", points, err)
		}
		p := NewCurve(points)
		prev := p.Due(0)
		for i := uint64(1); i < 50; i++ {
			due := p.Due(i)
			if due < prev || due < 0 {
				t.Fatalf("curve %v: Due(%d) = %v after %v", points, i, due, prev)
			}
			prev = due
		}
	})
}
