package relist_test

import (
	"slices"
	"strings"
	"testing"
)

// TestVariants: the filter keeps the named variants in their order, and a
// base build repeats each under its own name with its own binary.
func TestVariants(t *testing.T) {
	for _, tc := range []struct {
		only, base string
		want       []string
	}{
		{want: []string{"json", "protobuf", "protobuf-memlimit", "protobuf-nogzip"}},
		{only: "protobuf", want: []string{"protobuf"}},
		{only: "protobuf-memlimit,json", want: []string{"json", "protobuf-memlimit"}},
		{only: "protobuf", base: "/tmp/base.test", want: []string{"protobuf", "base-protobuf"}},
		{only: "nonesuch", want: nil},
	} {
		var got []string
		for _, v := range variants(tc.only, tc.base) {
			got = append(got, v.name)
			if base := strings.HasPrefix(v.name, "base-"); base != (v.bin == tc.base && tc.base != "") {
				t.Errorf("variants(%q, %q): %s runs %q", tc.only, tc.base, v.name, v.bin)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("variants(%q, %q) = %v, want %v", tc.only, tc.base, got, tc.want)
		}
	}
}
