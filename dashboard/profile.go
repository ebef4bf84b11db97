package dashboard

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sporeml/spore/profile"
)

// profileView is the answer of /api/profile: a compiled function's
// profile (package profile's record, as spore train --profile saves it
// beside the graphs) and, for each of its steps, the ID of the node of
// the record's last stage that the step computes.
type profileView struct {
	Function profile.FunctionRecord `json:"function"`
	// Nodes[i] is the node of step i in the last pass's graph.
	Nodes []int `json:"nodes"`
	// File names the profile's file under the run.
	File string `json:"file"`
}

// handleProfile answers /api/profile?run=R&file=F with the profile of
// the compiled function whose graph record is F (as /api/runs lists
// it), or 404 when none was recorded.
//
// Planning renumbers a graph's values by their positions after the last
// pass, and a step's ID is that position: the step of ID k computes the
// k-th node of the record's last stage. A profile belongs to a record
// when it names the same function, its inputs begin the record's
// signature, its graph has as many nodes, and every step's op is its
// node's: a record compiled for other shapes, or changed since, is never
// matched.
func (s *Server) handleProfile(w http.ResponseWriter, r *http.Request) {
	run, data, ok := s.graphRecord(w, r, "/api/profile needs run and file parameters (graph files as /api/runs lists them)")
	if !ok {
		return
	}
	var rec recordShape
	json.Unmarshal(data, &rec) // checkRecord decoded it
	recs, names, err := readProfiles(run.Dir)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "reading the profiles of run %q: %v", run.Name, err)
		return
	}
	for i, p := range recs {
		if nodes, ok := matchProfile(&rec, &p); ok {
			writeJSON(w, profileView{Function: p, Nodes: nodes, File: profile.Dir + "/" + names[i]})
			return
		}
	}
	httpError(w, http.StatusNotFound, "no profile of %s recorded in run %q (record one with spore train --profile --summary-dir)", clip(rec.Name+" "+rec.Signature), run.Name)
}

// readProfiles reads a run's profile records and their file names.
func readProfiles(dir string) ([]profile.FunctionRecord, []string, error) {
	pdir := filepath.Join(dir, profile.Dir)
	entries, err := os.ReadDir(pdir)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, unwrapPath(err)
	}
	var recs []profile.FunctionRecord
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(pdir, e.Name()))
		if err != nil {
			return nil, nil, unwrapPath(err)
		}
		var p profile.FunctionRecord
		if json.Unmarshal(data, &p) != nil {
			continue // not a profile: another file, shown nowhere
		}
		recs = append(recs, p)
		names = append(names, e.Name())
	}
	return recs, names, nil
}

// matchProfile returns, when p is the profile of rec's function, the
// node ID of each of p's steps in rec's last stage.
func matchProfile(rec *recordShape, p *profile.FunctionRecord) ([]int, bool) {
	if p.Name != rec.Name || !strings.HasPrefix(rec.Signature, p.Inputs) || len(rec.Passes) == 0 {
		return nil, false
	}
	last := rec.Passes[len(rec.Passes)-1].Graph
	if last == nil || last.Nodes == nil || len(*last.Nodes) != p.Nodes {
		return nil, false
	}
	nodes := *last.Nodes
	ids := make([]int, len(p.Steps))
	for i, st := range p.Steps {
		if st.ID < 0 || st.ID >= len(nodes) || nodes[st.ID] == nil || *nodes[st.ID].Op != st.Op {
			return nil, false
		}
		ids[i] = int(*nodes[st.ID].ID)
	}
	return ids, true
}
