// Package models holds ready-made networks: the seed network of
// MindSpore's execution-mode tutorial (Network, an MLP for 28×28 images),
// LeNet-5 and a small vision transformer (ViT). The CLI trains them on
// MNIST; the examples run Network in every execution mode.
package models
