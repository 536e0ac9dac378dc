//go:build race

package ledger

// raceEnabled: this test binary was built with -race.
const raceEnabled = true
