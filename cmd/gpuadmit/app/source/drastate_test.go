package source

import (
	"errors"
	"slices"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// TestReadDRA: the live cluster's ResourceSlices, and the ResourceClaims
// and ResourceClaimTemplates of the namespaces reported on; a server
// without resource.k8s.io/v1 warns once, a forbidden list warns and is
// left out, any other error fails.
func TestReadDRA(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{
			testclaim.HAMiDRA("team-a", "a", 1, 1024, 0), testclaim.HAMiDRA("team-b", "b", 1, 2048, 0),
			testclaim.Template("team-a", "t", testclaim.HAMiDRA("team-a", "", 1, 512, 0)),
			&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node1-hami"}},
		}
	}
	gr := schema.GroupResource{Group: resourcev1.GroupName}
	tests := []struct {
		name       string
		namespaces []string
		// fail makes the list of resource in namespace ns fail with err.
		fail                      func(resource, ns string) error
		claims, templates, slices []string
		// wantWarn are the parts of the one warning.
		wantWarn []string
		wantErr  string
	}{
		{name: "every namespace", claims: []string{"team-a/a", "team-b/b"}, templates: []string{"team-a/t"}, slices: []string{"node1-hami"}},
		{name: "one namespace: its claims and templates, every slice", namespaces: []string{"team-a"},
			claims: []string{"team-a/a"}, templates: []string{"team-a/t"}, slices: []string{"node1-hami"}},
		{name: "resource.k8s.io/v1 not served: one warning, nothing read", namespaces: []string{"team-a", "team-b"},
			fail:     func(string, string) error { return apierrors.NewNotFound(gr, "") },
			wantWarn: []string{"the server does not serve resource.k8s.io/v1 (", "not found): no ResourceClaim, ResourceClaimTemplate or ResourceSlice is read, so no claim is counted"}},
		{name: "claims forbidden in every namespace: a warning, the rest read",
			fail: func(r, ns string) error {
				if r == "resourceclaims" {
					return apierrors.NewForbidden(gr, "", errors.New("no"))
				}
				return nil
			},
			templates: []string{"team-a/t"}, slices: []string{"node1-hami"},
			wantWarn: []string{"cannot list resourceclaims in all namespaces (", "forbidden: no): those claims are not counted"},
		},
		{name: "slices forbidden", namespaces: []string{"team-b"},
			fail: func(r, _ string) error {
				if r == "resourceslices" {
					return apierrors.NewForbidden(gr, "", errors.New("no"))
				}
				return nil
			},
			claims: []string{"team-b/b"}, wantWarn: []string{"cannot list resourceslices (", "): claims of whole devices are sized by the nodes' largest device"}},
		{name: "another error fails", namespaces: []string{"team-b"},
			fail: func(r, _ string) error {
				if r == "resourceclaimtemplates" {
					return apierrors.NewInternalError(errors.New("etcd is away"))
				}
				return nil
			},
			wantErr: "listing resourceclaimtemplates in namespace team-b: Internal error occurred: etcd is away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset(objects()...)
			if tt.fail != nil {
				c.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
					err := tt.fail(a.GetResource().Resource, a.GetNamespace())
					return err != nil, nil, err
				})
			}
			objs := &manifest.Objects{}
			var warnings []string
			_, err := readDRA(t.Context(), c, tt.namespaces, objs, func(w string) { warnings = append(warnings, w) })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := namesOf(objs.Claims); !slices.Equal(got, tt.claims) {
				t.Errorf("claims %q, want %q", got, tt.claims)
			}
			if got := namesOf(objs.ClaimTemplates); !slices.Equal(got, tt.templates) {
				t.Errorf("templates %q, want %q", got, tt.templates)
			}
			if got := namesOf(objs.Slices); !slices.Equal(got, tt.slices) {
				t.Errorf("slices %q, want %q", got, tt.slices)
			}
			if len(warnings) != min(len(tt.wantWarn), 1) {
				t.Fatalf("warnings %q, want one with %q", warnings, tt.wantWarn)
			}
			for _, part := range tt.wantWarn {
				if !strings.Contains(warnings[0], part) {
					t.Errorf("warning %q lacks %q", warnings[0], part)
				}
			}
		})
	}
}

// namesOf are the objects' namespace/name, sorted (nil when none).
func namesOf[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		n := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			n = ns + "/" + n
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
