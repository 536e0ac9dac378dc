package burn_test

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// TestHoursToAmount: decimals exact, sub-millisecond rounded down (a limit
// never raised), huge values saturate instead of wrapping, negative refused.
func TestHoursToAmount(t *testing.T) {
	cases := []struct {
		in      string
		want    burn.Amount
		wantErr bool
	}{
		{in: "0", want: 0},
		{in: "1", want: 3_600_000},
		{in: "0.5", want: 1_800_000},
		{in: "1500m", want: 5_400_000},
		{in: "1u", want: 3}, // 3.6 ms, rounded down
		{in: "1n", want: 0}, // 0.0036 ms
		{in: "2.5k", want: 9_000_000_000},
		{in: "1e12", want: 3_600_000_000_000_000_000}, // fits: 3.6e18 < MaxInt64
		{in: "3e12", want: math.MaxInt64},
		{in: "9E", want: math.MaxInt64},
		{in: "1e300", want: math.MaxInt64},
		{in: "-1", wantErr: true},
		{in: "-1m", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := burn.HoursToAmount(resource.MustParse(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("%d, want %d", got, tc.want)
			}
		})
	}
}

// TestAmountToHours: at most two decimals, truncated so that a use just
// under its limit never reads as the limit.
func TestAmountToHours(t *testing.T) {
	cases := map[burn.Amount]string{
		0:                 "0",
		3_600_000:         "1",
		1_800_000:         "0.5",
		4_500_000:         "1.25",
		3_599_999:         "0.99",
		35_999:            "0",
		-1_800_000:        "-0.5",
		-1:                "0",
		math.MaxInt64:     "2562047788015.21",
		math.MinInt64:     "-2562047788015.21",
		2 * 3_600_000_000: "2000",
	}
	for in, want := range cases {
		if got := burn.AmountToHours(in); got != want {
			t.Errorf("AmountToHours(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestAmountToQuantity: milli-hours, truncated, never negative.
func TestAmountToQuantity(t *testing.T) {
	for in, want := range map[burn.Amount]string{0: "0", 3_600_000: "1", 1_800_000: "500m", 3_599: "0", 7_200: "2m", -5: "0",
		math.MaxInt64: "2562047788015215m"} {
		q := burn.AmountToQuantity(in)
		if got := q.String(); got != want {
			t.Errorf("AmountToQuantity(%d) = %s, want %s", in, got, want)
		}
	}
}
