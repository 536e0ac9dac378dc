package source

import (
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// impersonated is the user kubectl's --as and --as-group name, as the API
// server sees an impersonated request: the groups given, plus
// system:authenticated for any user but system:anonymous. ok is false
// without --as; --as-group without --as is an error, as in kubectl.
func impersonated(kube *genericclioptions.ConfigFlags) (u decision.UserInfo, ok bool, err error) {
	var groups []string
	if kube.ImpersonateGroup != nil {
		groups = slices.Clone(*kube.ImpersonateGroup)
	}
	if kube.Impersonate == nil || *kube.Impersonate == "" {
		if len(groups) > 0 {
			return u, false, cmdline.UsageErrorf("--as-group needs --as: the groups are those of an impersonated user")
		}
		return u, false, nil
	}
	u.Username = *kube.Impersonate
	if u.Username != user.Anonymous && !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(groups, user.AllAuthenticated)
	}
	u.Groups = groups
	return u, true, nil
}

// User is who the dump's requests come from: --as and --as-group, or
// nobody (an empty input.userInfo).
func (d Dump) User(context.Context) (decision.UserInfo, error) {
	u, _, err := impersonated(d.kube)
	return u, err
}

// User is who the requests come from: --as and --as-group, else the
// kubeconfig's user as the API server authenticates it (a
// SelfSubjectReview); nobody, with a warning, when that cannot be read.
func (l live) User(ctx context.Context) (decision.UserInfo, error) {
	u, ok, err := impersonated(l.kube)
	if ok || err != nil {
		return u, err
	}
	kc, err := l.client()
	if err != nil {
		return u, err
	}
	r, err := kc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		l.gaps.add("create selfsubjectreviews")
		l.warn(fmt.Sprintf("cannot tell who you are (%v): the policies see an empty userInfo; use --as and --as-group", err))
		return u, nil
	}
	return decision.UserInfo{Username: r.Status.UserInfo.Username, Groups: r.Status.UserInfo.Groups}, nil
}
