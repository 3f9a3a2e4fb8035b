#!/usr/bin/env bash
# Written for the import corpus: the shape of an eugr mod (a folder whose run.sh applies it).
set -euo pipefail
cp "$(dirname "$0")/chat_template.jinja" /workspace/chat_template.jinja
