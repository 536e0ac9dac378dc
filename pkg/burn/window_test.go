package burn_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

func mustWindow(t *testing.T, calendar, zone string, rolling time.Duration) burn.Window {
	t.Helper()
	w, err := burn.ParseWindow(calendar, zone, rolling)
	if err != nil {
		t.Fatalf("ParseWindow(%q, %q, %s): %v", calendar, zone, rolling, err)
	}
	return w
}

func local(t *testing.T, zone string, y int, m time.Month, d, h int) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(y, m, d, h, 0, 0, 0, loc)
}

// TestWindowDST: calendar windows in a zone keep to its midnights across a
// DST change: a 23- and a 25-hour day, a week and a month holding the
// change one hour short or long, in Europe/Berlin and America/New_York; and
// a zone whose clocks skip midnight itself (America/Havana) starts that day
// at its first existing hour.
func TestWindowDST(t *testing.T) {
	cases := []struct {
		name, calendar, zone string
		at                   func(*testing.T) time.Time
		start                func(*testing.T) time.Time
		length               time.Duration
	}{
		{"Berlin spring day", burn.Daily, "Europe/Berlin", func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 29, 12) },
			func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 29, 0) }, 23 * time.Hour},
		{"Berlin autumn day", burn.Daily, "Europe/Berlin", func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 10, 25, 1) },
			func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 10, 25, 0) }, 25 * time.Hour},
		{"Berlin week of the spring change", burn.Weekly, "Europe/Berlin", func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 29, 23) },
			func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 23, 0) }, 7*24*time.Hour - time.Hour},
		{"Berlin March", burn.Monthly, "Europe/Berlin", func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 31, 23) },
			func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 3, 1, 0) }, 31*24*time.Hour - time.Hour},
		{"Berlin October", burn.Monthly, "Europe/Berlin", func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 10, 1, 0) },
			func(t *testing.T) time.Time { return local(t, "Europe/Berlin", 2026, 10, 1, 0) }, 31*24*time.Hour + time.Hour},
		{"New York spring day", burn.Daily, "America/New_York", func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 3, 8, 4) },
			func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 3, 8, 0) }, 23 * time.Hour},
		{"New York autumn day", burn.Daily, "America/New_York", func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 11, 1, 23) },
			func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 11, 1, 0) }, 25 * time.Hour},
		{"New York November", burn.Monthly, "America/New_York", func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 11, 15, 0) },
			func(t *testing.T) time.Time { return local(t, "America/New_York", 2026, 11, 1, 0) }, 30*24*time.Hour + time.Hour},
		{"UTC week from Monday", burn.Weekly, "", func(*testing.T) time.Time { return time.Date(2026, 3, 8, 23, 59, 0, 0, time.UTC) },
			func(*testing.T) time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }, 7 * 24 * time.Hour},
		{"Havana, midnight skipped", burn.Daily, "America/Havana", func(t *testing.T) time.Time { return local(t, "America/Havana", 2026, 3, 8, 12) },
			func(t *testing.T) time.Time { return local(t, "America/Havana", 2026, 3, 8, 1) }, 23 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := mustWindow(t, tc.calendar, tc.zone, 0)
			start, end := w.At(tc.at(t))
			if !start.Equal(tc.start(t)) || end.Sub(start) != tc.length {
				t.Errorf("At = [%s, %s) (%s), want from %s for %s", start, end, end.Sub(start), tc.start(t), tc.length)
			}
		})
	}
}

// TestWindowProperties: for any moment in any of these zones, the window
// holds it, the next window starts where it ends, a day lasts 22 to 26
// hours, a week starts on a Monday; a rolling window is (t-d, t].
func TestWindowProperties(t *testing.T) {
	zones := []string{"", "UTC", "Europe/Berlin", "America/New_York", "America/Havana", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia", "America/Santiago"}
	r := rand.New(rand.NewPCG(47, 3))
	for _, zone := range zones {
		for _, cal := range []string{burn.Daily, burn.Weekly, burn.Monthly} {
			w := mustWindow(t, cal, zone, 0)
			for range 400 {
				m := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(4 * 366 * 24 * time.Hour))))
				start, end := w.At(m)
				if start.After(m) || !end.After(m) {
					t.Fatalf("%s: %s not in [%s, %s)", w, m, start, end)
				}
				if s2, e2 := w.At(end); !s2.Equal(end) || !e2.After(end) {
					t.Fatalf("%s: window after [%s, %s) is [%s, %s)", w, start, end, s2, e2)
				}
				if s3, e3 := w.At(start); !s3.Equal(start) || !e3.Equal(end) {
					t.Fatalf("%s: At(start) = [%s, %s), want [%s, %s)", w, s3, e3, start, end)
				}
				checkLength(t, w, cal, start, end)
			}
		}
	}
	w := mustWindow(t, "", "", 720*time.Hour)
	if s, e := w.At(t0); !s.Equal(t0.Add(-720*time.Hour)) || !e.Equal(t0) || w.String() != "rolling 720h0m0s" {
		t.Errorf("rolling: [%s, %s) %q", s, e, w)
	}
}

func checkLength(t *testing.T, w burn.Window, cal string, start, end time.Time) {
	t.Helper()
	if before := start.Add(-time.Nanosecond).In(start.Location()); before.Day() == start.Day() {
		t.Fatalf("%s: %s is not the first moment of its day", w, start)
	}
	d := end.Sub(start)
	ok := true
	switch cal {
	case burn.Daily:
		ok = d >= 22*time.Hour && d <= 26*time.Hour
	case burn.Weekly:
		ok = start.Weekday() == time.Monday && d >= 7*24*time.Hour-2*time.Hour && d <= 7*24*time.Hour+2*time.Hour
	case burn.Monthly:
		ok = start.Day() == 1 && d >= 28*24*time.Hour-2*time.Hour && d <= 31*24*time.Hour+2*time.Hour
	}
	if !ok {
		t.Fatalf("%s: a window of %s from %s", w, d, start)
	}
}

// TestParseWindowErrors: every refusal names the field that is wrong.
func TestParseWindowErrors(t *testing.T) {
	cases := []struct {
		calendar, zone string
		rolling        time.Duration
		field          string
	}{
		{"", "", 0, "spec.window"},
		{"Monthly", "", time.Hour, "spec.window"},
		{"Yearly", "", 0, "spec.window.calendar"},
		{"monthly", "", 0, "spec.window.calendar"},
		{"Monthly", "Mars/Olympus", 0, "spec.window.timeZone"},
		{"Monthly", "Local", 0, "spec.window.timeZone"},
		{"Monthly", "../../etc/passwd", 0, "spec.window.timeZone"},
		{"Monthly", "/etc/localtime", 0, "spec.window.timeZone"},
		{"", "UTC", time.Hour, "spec.window.timeZone"},
		{"", "", time.Minute, "spec.window.rolling"},
		{"", "", -time.Hour, "spec.window.rolling"},
		{"", "", 8785 * time.Hour, "spec.window.rolling"},
	}
	for _, tc := range cases {
		_, err := burn.ParseWindow(tc.calendar, tc.zone, tc.rolling)
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("ParseWindow(%q, %q, %s) = %v, want an error naming %s", tc.calendar, tc.zone, tc.rolling, err, tc.field)
		}
	}
	if got := mustWindow(t, burn.Monthly, "Europe/Berlin", 0).String(); got != "Monthly Europe/Berlin" {
		t.Errorf("String = %q", got)
	}
	if got := mustWindow(t, burn.Daily, "", 0).String(); got != "Daily UTC" {
		t.Errorf("String = %q", got)
	}
}

// FuzzParseWindow: whatever the spec holds, ParseWindow refuses it naming
// a field or returns a window that holds the moment asked.
func FuzzParseWindow(f *testing.F) {
	f.Add("Monthly", "Europe/Berlin", int64(0), int64(0))
	f.Add("", "", int64(time.Hour), int64(1e18))
	f.Add("Daily", "America/Havana", int64(0), int64(-1e18))
	f.Add("Weekly", "../x", int64(5), int64(7))
	f.Fuzz(func(t *testing.T, calendar, zone string, rolling, unixNano int64) {
		w, err := burn.ParseWindow(calendar, zone, time.Duration(rolling))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "spec.window") {
				t.Fatalf("error does not name a field: %v", err)
			}
			return
		}
		m := time.Unix(0, unixNano)
		start, end := w.At(m)
		if start.After(m) || end.Before(m) || (w.Rolling() == 0 && !end.After(m)) {
			t.Fatalf("%s: %s not in [%s, %s)", w, m, start, end)
		}
	})
}
