package source

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// progress prints, on a terminal, "reading the cluster: N pods listed..."
// while a live read lasts more than its delay, at most once per interval.
// A nil *progress prints nothing.
type progress struct {
	w        io.Writer
	pods     atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// startProgress starts the progress lines on stderr; nil (nothing
// printed) when stderr is not a terminal.
func startProgress(c *cmdline.CLI) *progress {
	if !c.TTY(c.Stderr) {
		return nil
	}
	return newProgress(c.Stderr, c.Clock, c.ProgressAfter, c.ProgressEvery)
}

// newProgress prints on w, after delay on clk and then every interval,
// until end. The timer is armed before newProgress returns.
func newProgress(w io.Writer, clk clock.Clock, delay, interval time.Duration) *progress {
	p := &progress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(clk.NewTimer(delay), interval)
	return p
}

func (p *progress) run(timer clock.Timer, interval time.Duration) {
	defer close(p.done)
	defer timer.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-timer.C():
			// The next line's timer is armed before this one is printed.
			timer.Reset(interval)
			fmt.Fprintf(p.w, "reading the cluster: %d pods listed...\n", p.pods.Load())
		}
	}
}

// listed records how many pods have been listed so far.
func (p *progress) listed(pods int) {
	if p != nil {
		p.pods.Store(int64(pods))
	}
}

// end stops the lines; none is printed after it returns.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}
