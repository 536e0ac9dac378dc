package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The configuration API's group and version.
const (
	Group   = "config.gpuadmit.io"
	Version = "v1alpha1"
	Kind    = "Configuration"
)

// SchemeGroupVersion is config.gpuadmit.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers Configuration (pkg/config adds its defaulting
// function: the defaults are set there, in one place).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Configuration{})
	return nil
}
