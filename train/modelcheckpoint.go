package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/internal/core"
)

// CheckpointConfig configures ModelCheckpoint, MindSpore's
// CheckpointConfig.
type CheckpointConfig struct {
	// Dir receives the files; it is created if missing ("" is the
	// current directory).
	Dir string
	// Prefix starts every file name; "" means "checkpoint".
	Prefix string
	// SaveSteps saves every this many global steps; SaveEpochs every this
	// many epochs. Both may be set; if neither is, every epoch is saved.
	SaveSteps, SaveEpochs int
	// KeepLast keeps only the newest KeepLast files this callback wrote,
	// deleting older ones (MindSpore's keep_checkpoint_max); 0 keeps all.
	KeepLast int
	// Format is the extension, ".safetensors" (the default) or ".ckpt".
	Format string
}

// ModelCheckpoint saves the network's parameters and the optimiser's
// state during training, MindSpore's ModelCheckpoint, to files named
// <prefix>-<epoch>_<step>.<format> where step is the step within the
// epoch. Writes are atomic; a failed save stops training with its error.
// In a data-parallel run only rank 0 writes, and only its Saved lists
// files.
type ModelCheckpoint struct {
	BaseCallback
	cfg CheckpointConfig
	// Saved lists the files written and still kept, oldest first.
	Saved []string
}

// NewModelCheckpoint returns the callback.
func NewModelCheckpoint(cfg CheckpointConfig) *ModelCheckpoint {
	const op = "train.ModelCheckpoint"
	if cfg.SaveSteps < 0 || cfg.SaveEpochs < 0 || cfg.KeepLast < 0 {
		core.Panicf(op, "negative setting in %+v", cfg)
	}
	if cfg.SaveSteps == 0 && cfg.SaveEpochs == 0 {
		cfg.SaveEpochs = 1
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "checkpoint"
	}
	switch cfg.Format {
	case "":
		cfg.Format = ".safetensors"
	case ".safetensors", ".ckpt":
	default:
		core.Panicf(op, "format %q: want .safetensors or .ckpt", cfg.Format)
	}
	return &ModelCheckpoint{cfg: cfg}
}

// OnTrainBegin creates the directory.
func (m *ModelCheckpoint) OnTrainBegin(c *RunContext) {
	if m.cfg.Dir != "" {
		if err := os.MkdirAll(m.cfg.Dir, 0o755); err != nil {
			c.StopWithError(fmt.Errorf("train: ModelCheckpoint: %w", err))
		}
	}
}

// OnStepEnd saves every SaveSteps global steps.
func (m *ModelCheckpoint) OnStepEnd(c *RunContext) {
	if m.cfg.SaveSteps > 0 && c.GlobalStep%m.cfg.SaveSteps == 0 {
		m.save(c)
	}
}

// OnEpochEnd saves every SaveEpochs epochs.
func (m *ModelCheckpoint) OnEpochEnd(c *RunContext) {
	if m.cfg.SaveEpochs > 0 && c.Epoch%m.cfg.SaveEpochs == 0 {
		m.save(c)
	}
}

func (m *ModelCheckpoint) save(c *RunContext) {
	if !c.Model.WritesCheckpoints() {
		return // rank 0 of a data-parallel run writes the files
	}
	name := filepath.Join(m.cfg.Dir, fmt.Sprintf("%s-%d_%d%s", m.cfg.Prefix, c.Epoch, c.Step, m.cfg.Format))
	if n := len(m.Saved); n > 0 && m.Saved[n-1] == name {
		return // the step and epoch periods met at the same point
	}
	if err := c.Model.SaveCheckpoint(name); err != nil {
		c.StopWithError(fmt.Errorf("train: ModelCheckpoint: %w", err))
		return
	}
	m.Saved = append(m.Saved, name)
	for m.cfg.KeepLast > 0 && len(m.Saved) > m.cfg.KeepLast {
		if err := os.Remove(m.Saved[0]); err != nil && !os.IsNotExist(err) {
			c.StopWithError(fmt.Errorf("train: ModelCheckpoint: removing an old checkpoint: %w", err))
			return
		}
		m.Saved = m.Saved[1:]
	}
}

// Latest returns the newest file written, or "".
func (m *ModelCheckpoint) Latest() string {
	if len(m.Saved) == 0 {
		return ""
	}
	return m.Saved[len(m.Saved)-1]
}
