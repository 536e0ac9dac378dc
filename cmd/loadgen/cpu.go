package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
)

// markPrefix starts the line a client process prints before each run and
// after the last ("<prefix> floor", "<prefix> validate", "<prefix> end"):
// the server's process reads its own CPU time at each (serverCPU).
const markPrefix = "loadgen-mark "

// cpuTime is this process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMarks records the process's CPU time at each mark.
type cpuMarks struct {
	names []string
	at    []time.Duration
}

func (m *cpuMarks) mark(name string) {
	m.names = append(m.names, name)
	m.at = append(m.at, cpuTime())
}

// perReview prints the CPU each run took per review (whose is who: the
// server alone, or the server and the client in one process).
func (m *cpuMarks) perReview(w io.Writer, who string, n int) {
	if len(m.at) < 2 || n <= 0 {
		return
	}
	parts := make([]string, 0, len(m.at)-1)
	for i := 1; i < len(m.at); i++ {
		parts = append(parts, fmt.Sprintf("%s %.1f µs", m.names[i-1], float64((m.at[i]-m.at[i-1]).Microseconds())/float64(n)))
	}
	fmt.Fprintf(w, "CPU per review (%s): %s\n", who, strings.Join(parts, ", "))
}

// serverCPU forwards the client process's output (r) to w, reading this
// process's CPU time at each of its marks.
func serverCPU(r io.Reader, w io.Writer) *cpuMarks {
	m := &cpuMarks{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, markPrefix); ok {
			m.mark(name)
			continue
		}
		fmt.Fprintln(w, line)
	}
	return m
}
