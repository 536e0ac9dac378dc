package podwire

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The pod watch's client decodes protobuf Pods and PodLists with a
// podSkimmer instead of whole: the API server's bytes are the same, the
// objects hold what PodTransform keeps. Every other response (a Status, a
// JSON body) is decoded as client-go's generated clients decode it.

// ProtobufConfig returns a copy of cfg that asks the API server for
// protobuf (falling back to JSON), for the clientset of a Feed: Pods, Nodes,
// ResourceQuotas and Namespaces are built-in types, which the API server
// serves in protobuf. client-go's generated clients already prefer protobuf
// when cfg names no content type; this makes the choice explicit, so that
// a content type set elsewhere cannot turn a relist into JSON (about twice
// the decoding, tests/relist). Not for custom resources (GPUUsage), which
// the API server serves in JSON only.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// ListWatch lists and watches every pod through a client built from cfg
// whose protobuf decoder skims pods for fams.
func ListWatch(cfg *rest.Config, fams []effective.Family) (*toolscache.ListWatch, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = podCodecs{base: scheme.Codecs.WithoutConversion(), skim: newPodSkimmer(fams)}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod client: %w", err)
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			var out metav1.List // of slimmed pods (podSerializer.slimList)
			err := rc.Get().Resource("pods").VersionedParams(&o, scheme.ParameterCodec).Timeout(timeoutOf(o)).Do(ctx).Into(&out)
			return &out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return rc.Get().Resource("pods").VersionedParams(&o, scheme.ParameterCodec).Timeout(timeoutOf(o)).Watch(ctx)
		},
	}, nil
}

// timeoutOf is the request timeout the generated clients derive from o.
func timeoutOf(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}

// podCodecs is base with its protobuf serializer skimming pods.
type podCodecs struct {
	base runtime.NegotiatedSerializer
	skim *podSkimmer
}

// SupportedMediaTypes are base's, protobuf's decoder skimming pods.
func (c podCodecs) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := slices.Clone(c.base.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType != runtime.ContentTypeProtobuf {
			continue
		}
		infos[i].Serializer = podSerializer{Serializer: infos[i].Serializer, skim: c.skim}
		if st := infos[i].StreamSerializer; st != nil {
			stream := *st
			stream.Serializer = watchEventSerializer{Serializer: st.Serializer}
			infos[i].StreamSerializer = &stream
		}
	}
	return infos
}

// EncoderForVersion is base's.
func (c podCodecs) EncoderForVersion(e runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return c.base.EncoderForVersion(e, gv)
}

// DecoderToVersion is base's.
func (c podCodecs) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return c.base.DecoderToVersion(d, gv)
}

// podSerializer decodes v1 Pods and PodLists with skim, anything else with
// the protobuf Serializer it embeds.
type podSerializer struct {
	runtime.Serializer
	skim *podSkimmer
}

// protobufPrefix starts every protobuf body of the API server.
var protobufPrefix = []byte("k8s\x00")

// Decode skims a v1 Pod into nil (slimmed: PodTransform's result, a Pod
// or a PartialObjectMetadata) or into a *corev1.Pod (skimmed), a PodList
// into a *metav1.List (its items slimmed) or a *corev1.PodList (skimmed);
// anything else is the embedded serializer's.
func (s podSerializer) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	kind, raw, ok := envelope(data)
	if !ok {
		return s.Serializer.Decode(data, gvk, into)
	}
	actual := &schema.GroupVersionKind{Version: "v1", Kind: kind}
	switch into := into.(type) {
	case nil:
		if kind == "Pod" {
			obj, err := s.skim.decode(raw)
			if err != nil {
				return nil, actual, fmt.Errorf("decoding a pod: %w", err)
			}
			return obj, actual, nil
		}
	case *corev1.Pod:
		if kind == "Pod" {
			*into = corev1.Pod{}
			return into, actual, s.skimPod(raw, into)
		}
	case *corev1.PodList:
		if kind == "PodList" {
			*into = corev1.PodList{}
			return into, actual, s.podList(raw, into)
		}
	case *metav1.List:
		if kind == "PodList" {
			*into = metav1.List{}
			return into, actual, s.slimList(raw, into)
		}
	}
	return s.Serializer.Decode(data, gvk, into)
}

func (s podSerializer) skimPod(raw []byte, p *corev1.Pod) error {
	if err := s.skim.pod(raw, p); err != nil {
		return fmt.Errorf("decoding a pod: %w", err)
	}
	return nil
}

// podList skims a PodList: its ListMeta whole, its items skimmed.
func (s podSerializer) podList(b []byte, l *corev1.PodList) error {
	return eachListItem(b, &l.ListMeta, func(v []byte) error {
		l.Items = append(l.Items, corev1.Pod{})
		return s.skim.pod(v, &l.Items[len(l.Items)-1])
	})
}

// slimList decodes a PodList into a List: its ListMeta whole, its items
// slimmed (a List holds Pods and PartialObjectMetadata alike, as a
// reflector's store does).
func (s podSerializer) slimList(b []byte, l *metav1.List) error {
	return eachListItem(b, &l.ListMeta, func(v []byte) error {
		obj, err := s.skim.decode(v)
		l.Items = append(l.Items, runtime.RawExtension{Object: obj})
		return err
	})
}

// eachListItem reads a protobuf PodList: its ListMeta into meta, each
// item's bytes handed to item.
func eachListItem(b []byte, meta *metav1.ListMeta, item func(v []byte) error) error {
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return meta.Unmarshal(v)
		case 2:
			return item(v)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("decoding a pod list: %w", err)
	}
	return nil
}

// envelope reads the runtime.Unknown around a protobuf body without
// copying: the kind and the raw bytes of a v1 Pod or PodList, ok false for
// anything else (another kind, a content encoding, no protobuf prefix).
func envelope(data []byte) (kind string, raw []byte, ok bool) {
	rest, found := bytes.CutPrefix(data, protobufPrefix)
	if !found {
		return "", nil, false
	}
	var apiVersion string
	encoded := false
	err := eachField(rest, func(num protowire.Number, v []byte) error {
		switch num {
		case 1: // TypeMeta
			return eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					apiVersion = string(v)
				case 2:
					kind = string(v)
				}
				return nil
			})
		case 2:
			raw = v
		case 3:
			encoded = len(v) > 0
		}
		return nil
	})
	if err != nil || encoded || apiVersion != "v1" || (kind != "Pod" && kind != "PodList") {
		return "", nil, false
	}
	return kind, raw, true
}

// watchEventSerializer decodes a protobuf WatchEvent without copying its
// object: the event's Object.Raw is a slice of the frame it was read from,
// which the watch decoder reuses for the next frame. That is safe because
// client-go's watch decoder (rest/watch) decodes the object, with the
// serializer of the same media type (podSerializer, which copies what it
// keeps, or the protobuf serializer, which copies), before it reads the
// next frame, and keeps the event itself nowhere. A relist is otherwise a
// copy of every pod's bytes, most of what is left to allocate.
type watchEventSerializer struct {
	runtime.Serializer
}

// Decode reads into a *metav1.WatchEvent, aliasing data; anything else is
// the embedded serializer's.
func (s watchEventSerializer) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return s.Serializer.Decode(data, gvk, into)
	}
	*ev = metav1.WatchEvent{}
	err := eachField(data, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			ev.Type = string(v)
		case 2: // a RawExtension: its raw bytes
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num == 1 {
					ev.Object.Raw = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, gvk, fmt.Errorf("decoding a watch event: %w", err)
	}
	return ev, gvk, nil
}
