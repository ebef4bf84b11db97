package train

import (
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/nn"
)

// NetParams lists a network's parameters under their hierarchical names,
// as the checkpoint package takes them.
func NetParams(net nn.Module) checkpoint.Params {
	var ps checkpoint.Params
	for _, p := range net.Base().NamedParameters() {
		ps = append(ps, checkpoint.Param{Name: p.Name, Tensor: p.Tensor})
	}
	return ps
}

// SaveCheckpoint writes net's parameters to path, MindSpore's
// save_checkpoint: MindSpore's .ckpt format or safetensors, by the file's
// extension, written atomically.
func SaveCheckpoint(net nn.Module, path string) error {
	return checkpoint.Save(path, NetParams(net), nil)
}

// LoadCheckpoint reads the parameters saved in path, MindSpore's
// load_checkpoint. A truncated or corrupted file is an error, never a
// partial result.
func LoadCheckpoint(path string) ([]checkpoint.Param, error) {
	ps, _, err := checkpoint.Load(path)
	return ps, err
}

// LoadParamIntoNet copies params into net's parameters by name, MindSpore's
// load_param_into_net. A strict load reports every missing, unexpected and
// shape- or dtype-mismatched name in one error and changes nothing; a
// non-strict load assigns the matching ones and returns the names of the
// network's parameters it could not load (missing or mismatched) and of
// the entries it did not use.
func LoadParamIntoNet(net nn.Module, params []checkpoint.Param, strict bool) (notLoaded, unused []string, err error) {
	missing, unexpected, mismatched, err := checkpoint.LoadInto(NetParams(net), params, strict)
	return append(missing, mismatched...), unexpected, err
}
