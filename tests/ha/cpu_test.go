package ha_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// userHZ is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every architecture Linux supports: the proc ABI fixes it).
const userHZ = 100

// cpuSeconds returns the CPU (user + system) spent so far by this test
// process ("client": the creating clients and the harness) and by each of
// its children, summed by command name (kube-apiserver, etcd, webhook).
// A child that exited is gone from /proc, so only differences taken while
// the same processes run mean something.
func cpuSeconds(tb testing.TB) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	self := strconv.Itoa(os.Getpid())
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		tb.Fatal(err)
	}
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil { // exited since the glob
			continue
		}
		comm, ppid, cpu, err := parseStat(raw)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		switch {
		case filepath.Base(filepath.Dir(path)) == self:
			out["client"] += cpu
		case ppid == self:
			out[comm] += cpu
		}
	}
	return out
}

// parseStat reads the command name, the parent's pid and utime+stime (in
// seconds) of one /proc/<pid>/stat line: "pid (comm) state ppid ..." with
// utime and stime the 14th and 15th fields; comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(raw []byte) (comm, ppid string, cpu float64, err error) {
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", "", 0, fmt.Errorf("no command name in %q", raw)
	}
	rest := strings.Fields(string(raw[end+1:])) // from field 3 (state) on
	if len(rest) < 13 {
		return "", "", 0, fmt.Errorf("%d fields after the command name, want at least 13", len(rest))
	}
	var ticks int64
	for _, f := range rest[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return "", "", 0, fmt.Errorf("CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return string(raw[open+1 : end]), rest[1], float64(ticks) / userHZ, nil
}

// reportCPU reports, per create, the CPU milliseconds each process kind
// spent between before and after, and all of them together.
func reportCPU(b *testing.B, before, after map[string]float64, creates int) {
	b.Helper()
	var all float64
	for comm, s := range after {
		d := s - before[comm]
		all += d
		switch comm {
		case "kube-apiserver":
			b.ReportMetric(1000*d/float64(creates), "apiserver-cpu-ms/create")
		case "webhook":
			b.ReportMetric(1000*d/float64(creates), "replicas-cpu-ms/create")
		}
	}
	b.ReportMetric(1000*all/float64(creates), "all-cpu-ms/create")
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, line, comm, ppid string
		cpu                    float64
		wantErr                bool
	}{
		{name: "plain", line: "42 (etcd) S 7 42 42 0 -1 4194560 1 0 0 0 150 25 0 0 20 0 12 0 1 2 3",
			comm: "etcd", ppid: "7", cpu: 1.75},
		{name: "spaces and parentheses in the name", line: "9 (a (b) c) R 1 9 9 0 -1 0 0 0 0 0 3 4 0 0",
			comm: "a (b) c", ppid: "1", cpu: 0.07},
		{name: "truncated", line: "9 (x) R 1 9 9", wantErr: true},
		{name: "no name", line: "9 x R 1", wantErr: true},
		{name: "not a number", line: "9 (x) R 1 9 9 0 -1 0 0 0 0 0 3z 4 0 0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comm, ppid, cpu, err := parseStat([]byte(tc.line))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && (comm != tc.comm || ppid != tc.ppid || cpu != tc.cpu) {
				t.Fatalf("got %q %q %v, want %q %q %v", comm, ppid, cpu, tc.comm, tc.ppid, tc.cpu)
			}
		})
	}
}
