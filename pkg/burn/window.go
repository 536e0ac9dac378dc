package burn

import (
	"errors"
	"fmt"
	"time"
)

// The calendar windows (the API's spec.window.calendar values).
const (
	Monthly = "Monthly"
	Weekly  = "Weekly"
	Daily   = "Daily"
)

// The bounds of a rolling window.
const (
	MinRolling = time.Hour
	MaxRolling = 8784 * time.Hour
)

// Window is a budget's window: a calendar month, week (from Monday) or day
// from midnight in a time zone, or a rolling duration ending now. The zero
// Window is not valid; build one with ParseWindow.
type Window struct {
	calendar string
	zone     *time.Location
	rolling  time.Duration
}

// ParseWindow builds a window from a budget's spec.window: calendar with
// timeZone (an IANA name, UTC when empty), or rolling (between 1h and
// 8784h). The error names the field that is wrong.
func ParseWindow(calendar, timeZone string, rolling time.Duration) (Window, error) {
	switch {
	case calendar != "" && rolling != 0:
		return Window{}, errors.New("spec.window: set exactly one of calendar and rolling")
	case calendar == "" && rolling == 0:
		return Window{}, errors.New("spec.window: set one of calendar and rolling")
	case rolling != 0:
		if timeZone != "" {
			return Window{}, errors.New("spec.window.timeZone: goes with calendar, not rolling")
		}
		if rolling < MinRolling || rolling > MaxRolling {
			return Window{}, fmt.Errorf("spec.window.rolling: %s is not between %s and %s", rolling, MinRolling, MaxRolling)
		}
		return Window{rolling: rolling}, nil
	}
	switch calendar {
	case Monthly, Weekly, Daily:
	default:
		return Window{}, fmt.Errorf("spec.window.calendar: %q is not one of %s, %s, %s", calendar, Monthly, Weekly, Daily)
	}
	zone := time.UTC
	if timeZone != "" && timeZone != "UTC" {
		loc, err := loadZone(timeZone)
		if err != nil {
			return Window{}, err
		}
		zone = loc
	}
	return Window{calendar: calendar, zone: zone}, nil
}

// loadZone loads an IANA zone, refusing names the loader would read as a
// path ("Local", absolute, with dots).
func loadZone(name string) (*time.Location, error) {
	if name == "Local" || len(name) > 64 {
		return nil, fmt.Errorf("spec.window.timeZone: %q is not an IANA time zone name", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("spec.window.timeZone: %q is not a known IANA time zone: %w", name, err)
	}
	return loc, nil
}

// Rolling is the duration of a rolling window (0 for a calendar one).
func (w Window) Rolling() time.Duration { return w.rolling }

// Calendar is Monthly, Weekly or Daily ("" for a rolling window).
func (w Window) Calendar() string { return w.calendar }

// IsZero reports whether w was not built by ParseWindow.
func (w Window) IsZero() bool { return w.rolling == 0 && w.calendar == "" }

// At is the window that holds t: for a calendar window [start, end) from
// midnight of its first day to midnight of the next period's first day in
// the zone (a day of 23 or 25 hours across a DST change); for a rolling
// window (t-d, t], reported as start t-d and end t. Both are in the
// window's zone (UTC for a rolling one). The zero Window returns t, t.
func (w Window) At(t time.Time) (start, end time.Time) {
	if w.rolling != 0 {
		return t.Add(-w.rolling).UTC(), t.UTC()
	}
	if w.calendar == "" {
		return t, t
	}
	lt := t.In(w.zone)
	y, m, d := lt.Date()
	switch w.calendar {
	case Monthly:
		return w.bounds(t, y, m, 1, 0, 1)
	case Weekly:
		back := (int(lt.Weekday()) + 6) % 7 // days since Monday
		return w.bounds(t, y, m, d-back, 7, 0)
	default:
		return w.bounds(t, y, m, d, 1, 0)
	}
}

// bounds is the period starting at midnight of (y, m, d) lasting days days
// and months months, corrected so that start <= t < end even in a zone
// whose midnight does not exist on some day.
func (w Window) bounds(t time.Time, y int, m time.Month, d, days, months int) (start, end time.Time) {
	start = midnight(y, m, d, w.zone)
	end = midnight(y, m+time.Month(months), d+days, w.zone)
	if start.After(t) { // the zone skipped midnight and normalised forward
		start = t
	}
	if !end.After(t) {
		end = t.Add(time.Nanosecond)
	}
	return start, end
}

// midnight is the first instant of the day (y, m, d) in zone: midnight, or
// where a DST change skips midnight, the first time that exists that day.
func midnight(y int, m time.Month, d int, zone *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, zone)
	ny, nm, nd := time.Date(y, m, d, 12, 0, 0, 0, zone).Date()
	if ty, tm, td := t.Date(); ty != ny || tm != nm || td != nd {
		// midnight did not exist: time.Date normalised it into the previous
		// day; the day starts at its first existing hour.
		for h := 1; h < 12; h++ {
			if c := time.Date(y, m, d, h, 0, 0, 0, zone); c.Day() == nd {
				return c
			}
		}
	}
	return t
}

// String describes the window: "Monthly Europe/Berlin", "Daily UTC",
// "rolling 720h0m0s".
func (w Window) String() string {
	switch {
	case w.rolling != 0:
		return "rolling " + w.rolling.String()
	case w.calendar == "":
		return "invalid"
	}
	return w.calendar + " " + w.zone.String()
}
