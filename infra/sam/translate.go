package sam

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
)

// translateScript runs the SAM translator (aws-sam-translator, Python) on
// a template: what CloudFormation's AWS::Serverless transform does at
// deploy time. `make lint` runs the same file.
//
//go:embed translate.py
var translateScript []byte

// ErrNoTranslator says python3 or aws-sam-translator is missing here.
var ErrNoTranslator = errors.New("the SAM translator is not installed (pip install 'aws-sam-translator==1.110.*')")

// Translate returns the CloudFormation template the SAM translator makes
// of the template at path, decoded from JSON. It needs python3 with
// aws-sam-translator; without them it returns ErrNoTranslator.
func Translate(ctx context.Context, path string) (map[string]any, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, ErrNoTranslator
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, py, "-", path)
	cmd.Stdin = bytes.NewReader(translateScript)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			return nil, ErrNoTranslator
		}
		return nil, fmt.Errorf("SAM translator on %s: %w\n%s", path, err, stderr.Bytes())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("SAM translator output: %w", err)
	}
	return out, nil
}
