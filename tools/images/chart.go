package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// chartImages is what the chart deploys: the images' references (without
// a digest) and the release they are of.
type chartImages struct {
	// Webhook and Agent are repository:tag as the chart renders them.
	Webhook, Agent string
	// AppVersion is Chart.yaml's appVersion (the default tag).
	AppVersion string
	// Source is the project's source URL (Chart.yaml's first source).
	Source string
}

type chartFile struct {
	AppVersion string   `json:"appVersion"`
	Sources    []string `json:"sources"`
}

type imageValues struct {
	Registry   string `json:"registry"`
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
}

type valuesFile struct {
	Global struct {
		ImageRegistry string `json:"imageRegistry"`
	} `json:"global"`
	Image imageValues `json:"image"`
	Agent struct {
		Image imageValues `json:"image"`
	} `json:"agent"`
}

// readChart reads the image names of the chart in dir as its templates
// render them with the default values (the gpuadmit.image helper): the
// registry (image.registry, else global.imageRegistry) before the
// repository, the tag or else appVersion.
func readChart(dir string) (chartImages, error) {
	var c chartFile
	if err := readYAML(filepath.Join(dir, "Chart.yaml"), &c); err != nil {
		return chartImages{}, err
	}
	var v valuesFile
	if err := readYAML(filepath.Join(dir, "values.yaml"), &v); err != nil {
		return chartImages{}, err
	}
	if c.AppVersion == "" {
		return chartImages{}, fmt.Errorf("%s: no appVersion", filepath.Join(dir, "Chart.yaml"))
	}
	out := chartImages{AppVersion: c.AppVersion}
	if len(c.Sources) > 0 {
		out.Source = c.Sources[0]
	}
	var err error
	if out.Webhook, err = imageRef(v.Image, v.Global.ImageRegistry, c.AppVersion); err != nil {
		return chartImages{}, fmt.Errorf("%s: image: %w", filepath.Join(dir, "values.yaml"), err)
	}
	if out.Agent, err = imageRef(v.Agent.Image, v.Global.ImageRegistry, c.AppVersion); err != nil {
		return chartImages{}, fmt.Errorf("%s: agent.image: %w", filepath.Join(dir, "values.yaml"), err)
	}
	return out, nil
}

func imageRef(v imageValues, globalRegistry, appVersion string) (string, error) {
	if v.Repository == "" {
		return "", fmt.Errorf("repository is empty")
	}
	repo := v.Repository
	registry := v.Registry
	if registry == "" {
		registry = globalRegistry
	}
	if registry = strings.TrimSuffix(registry, "/"); registry != "" {
		repo = registry + "/" + repo
	}
	tag := v.Tag
	if tag == "" {
		tag = appVersion
	}
	return repo + ":" + tag, nil
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the chart: %w", err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
