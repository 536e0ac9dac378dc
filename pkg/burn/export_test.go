package burn

import (
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Burn is what charge burns held for d (zero for a non-positive d),
// saturating (the tests' yardstick).
func Burn(charge effective.Usage, d time.Duration) Amounts {
	return usageAmounts(nil, charge, d.Milliseconds())
}
