"""The SAM transform of a template, as CloudFormation receives it.

Usage: python sam-transform.py template.yaml out.json, with the SAM CLI's
virtualenv (it brings samtranslator). No AWS call is made: the template
names no managed policy by name, so the policy loader is never asked. A
function's local CodeUri becomes an S3 URI, as `sam package` makes it.
"""
import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """Answers the translator's managed-policy lookups with none."""

    def load(self):
        return {}


def main(src, dst):
    with open(src) as f:
        template = yaml_parse(f.read())
    for name, res in template.get("Resources", {}).items():
        props = res.get("Properties", {})
        if res.get("Type") == "AWS::Serverless::Function" and not str(props.get("CodeUri", "")).startswith("s3://"):
            props["CodeUri"] = "s3://packaged/%s.zip" % name
    out = transform(template, {}, NoManagedPolicies())
    with open(dst, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
