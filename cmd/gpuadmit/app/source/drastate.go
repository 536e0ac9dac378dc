package source

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	resourcev1client "k8s.io/client-go/kubernetes/typed/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// draPageSize is the number of objects asked for per list request.
const draPageSize = 500

// draReader lists the cluster's Dynamic Resource Allocation objects
// (resource.k8s.io/v1) into objs, with the client the pods are listed with.
type draReader struct {
	api  resourcev1client.ResourceV1Interface
	objs *manifest.Objects
}

// draList is one list readDRA makes: what (the resource), in namespace ns
// ("" for every namespace, and for the cluster-scoped ResourceSlices),
// where said as the messages say it.
type draList struct {
	what, ns, where string
	list            func(ctx context.Context, ns string) error
}

// readDRA adds the cluster's ResourceSlices, and the ResourceClaims and
// ResourceClaimTemplates of namespaces (nil: every namespace), to objs. A
// server that does not serve resource.k8s.io/v1 has none: warn says so,
// once, and nothing more is read. A list that is forbidden is warned about
// and left out, and named in forbidden ("list resourceclaims in namespace
// team-a").
func readDRA(ctx context.Context, kc kubernetes.Interface, namespaces []string, objs *manifest.Objects, warn func(string)) (forbidden []string, _ error) {
	r := draReader{api: kc.ResourceV1(), objs: objs}
	lists := []draList{{what: "resourceslices", list: r.slices}}
	scope := namespaces
	if scope == nil {
		scope = []string{metav1.NamespaceAll}
	}
	for _, ns := range scope {
		where := " in all namespaces"
		if ns != metav1.NamespaceAll {
			where = " in namespace " + ns
		}
		lists = append(lists, draList{"resourceclaims", ns, where, r.claims}, draList{"resourceclaimtemplates", ns, where, r.templates})
	}
	for _, l := range lists {
		err := l.list(ctx, l.ns)
		switch {
		case apierrors.IsNotFound(err):
			warn(fmt.Sprintf("the server does not serve %s/v1 (%v): no ResourceClaim, ResourceClaimTemplate or ResourceSlice is read, so no claim is counted",
				resourcev1.GroupName, err))
			return forbidden, nil
		case apierrors.IsForbidden(err):
			warn(fmt.Sprintf("cannot list %s%s (%v): %s", l.what, l.where, err, leftOut(l.what)))
			forbidden = append(forbidden, "list "+l.what+l.where)
		case err != nil:
			return forbidden, fmt.Errorf("listing %s%s: %w", l.what, l.where, err)
		}
	}
	return forbidden, nil
}

// leftOut says what a forbidden list leaves out.
func leftOut(what string) string {
	switch what {
	case "resourceslices":
		return "claims of whole devices are sized by the nodes' largest device"
	case "resourceclaimtemplates":
		return "the claims of pods' templates are not counted until they are created"
	}
	return "those claims are not counted"
}

func (r draReader) slices(ctx context.Context, _ string) error {
	return pages(ctx, r.api.ResourceSlices().List, func(l *resourcev1.ResourceSliceList) {
		for i := range l.Items {
			r.objs.Slices = append(r.objs.Slices, &l.Items[i])
		}
	})
}

func (r draReader) claims(ctx context.Context, ns string) error {
	return pages(ctx, r.api.ResourceClaims(ns).List, func(l *resourcev1.ResourceClaimList) {
		for i := range l.Items {
			r.objs.Claims = append(r.objs.Claims, &l.Items[i])
		}
	})
}

func (r draReader) templates(ctx context.Context, ns string) error {
	return pages(ctx, r.api.ResourceClaimTemplates(ns).List, func(l *resourcev1.ResourceClaimTemplateList) {
		for i := range l.Items {
			r.objs.ClaimTemplates = append(r.objs.ClaimTemplates, &l.Items[i])
		}
	})
}

// pages calls add with every page of a list (each page of the same
// snapshot, as continue tokens keep it).
func pages[L interface{ GetContinue() string }](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error), add func(L)) error {
	opts := metav1.ListOptions{Limit: draPageSize}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l, err := list(ctx, opts)
		if err != nil {
			return err
		}
		add(l)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}
