module github.com/sporeml/spore

go 1.26
