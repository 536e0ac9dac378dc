package testhooks

import (
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ClockFileFlag names the flag of the simulated time: a file holding a
// duration (time.ParseDuration) that every replica's clock runs ahead, so
// that a test moves the simulated time of all its replicas at once by
// rewriting it.
const ClockFileFlag = "test-clock-file"

// ClockFile is the argument that reads the replica's clock offset from path.
func ClockFile(path string) string { return "--" + ClockFileFlag + "=" + path }

// clockRereadEvery bounds how often the file is read.
const clockRereadEvery = 100 * time.Millisecond

// fileClock is base moved by the duration the file at path holds (zero
// while it is missing or unreadable), re-read at most every
// clockRereadEvery; never moved back (a test only advances time). Its
// timers and tickers are base's: a wait is a duration.
type fileClock struct {
	clock.WithTicker
	path string

	mu     sync.Mutex
	read   time.Time // when base last read the file
	offset time.Duration
}

// NewFileClock returns the clock of --test-clock-file: base moved ahead
// by the duration the file at path holds.
func NewFileClock(base clock.WithTicker, path string) clock.WithTicker {
	return &fileClock{WithTicker: base, path: path}
}

func (c *fileClock) Now() time.Time {
	now := c.WithTicker.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read.IsZero() || now.Sub(c.read) >= clockRereadEvery || now.Before(c.read) {
		c.read = now
		if b, err := os.ReadFile(c.path); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil && d > c.offset {
				c.offset = d
			}
		}
	}
	return now.Add(c.offset)
}

func (c *fileClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
