package main

import "github.com/sporeml/spore"

// parseAmpLevel reads --amp-level, refusing what spore does not build as a
// usage error that names the flag.
func parseAmpLevel(s string) (spore.AmpLevel, error) {
	l, err := spore.ParseAmpLevel(s)
	if err != nil {
		return "", usagef("--amp-level: %v", err)
	}
	return l, nil
}
