#!/usr/bin/env python3
"""Transform a SAM template into the CloudFormation template AWS would deploy.

Runs the SAM translator (aws-sam-translator) offline: managed policies are
named by ARN in this project, so no IAM look-up is needed. Prints the
transformed template as JSON on stdout; exits 1 with the translator's
message when the template does not transform.

    python3 infra/sam/translate.py template.yaml > transformed.json
"""
import json
import logging
import os
import sys

# The translator wants a region for its pseudo parameters; nothing is sent.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# Without a feature-toggle config the translator warns about each flag it
# looks up; those notes say nothing about the template.
logging.getLogger("samtranslator.feature_toggle").setLevel(logging.ERROR)

try:
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    sys.stderr.write(
        "aws-sam-translator is not installed: pip install 'aws-sam-translator==1.110.*'\n"
    )
    sys.exit(3)


class NoManagedPolicies:
    """A managed-policy loader that needs no AWS credentials."""

    def load(self):
        return {}


def as_packaged(template):
    """Point local CodeUri folders at S3, as `sam package` does before deploying."""
    for res in template.get("Resources", {}).values():
        props = res.get("Properties") or {}
        uri = props.get("CodeUri")
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(uri, str) and not uri.startswith("s3://"):
            props["CodeUri"] = "s3://packaged-artifacts/" + uri.strip("/") + ".zip"


def main(path):
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    as_packaged(template)
    try:
        out = transform(template, {}, NoManagedPolicies())
    except InvalidDocumentException as e:
        for cause in e.causes:
            sys.stderr.write(f"{path}: {cause.message}\n")
        sys.stderr.write(f"{path}: {e.message}\n")
        return 1
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
