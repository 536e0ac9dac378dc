package feed

import (
	"context"
	"sync"

	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// progress is how far the pod feed got, with a signal for whoever waits
// for it to pass a resourceVersion.
type progress struct {
	mu    sync.Mutex
	rv    string        // "" until the first list is applied
	moved chan struct{} // closed and replaced whenever rv moves
}

func (p *progress) init() { p.moved = make(chan struct{}) }

func (p *progress) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rv
}

// advance moves the progress to rv when rv is later.
func (p *progress) advance(rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !resourceversion.Valid(rv) || (p.rv != "" && !resourceversion.Newer(rv, p.rv)) {
		return
	}
	p.rv = rv
	close(p.moved)
	p.moved = make(chan struct{})
}

// wait returns once the progress reached rv, or ctx's error.
func (p *progress) wait(ctx context.Context, rv string) error {
	for {
		p.mu.Lock()
		reached, moved := resourceversion.AtLeast(p.rv, rv), p.moved
		p.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}
