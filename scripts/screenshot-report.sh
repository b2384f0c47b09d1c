#!/usr/bin/env bash
# Renders report.html files in headless Chromium (Debian's `chromium` package) and writes a PNG of
# each page's first screen (1280×900), to check by eye what a reader sees first.
#
#   scripts/screenshot-report.sh OUT_DIR/report.html [MORE.html ...] [-o PNG_DIR]
#
# Each PNG is named after the report's directory (`h200-quick-all.png` for
# .../h200-quick-all/report.html) and written to PNG_DIR (default: the current directory).
# Needs: chromium (`apt-get install -y chromium`). Not run by CI.
set -euo pipefail

usage() {
    echo "usage: $0 REPORT.html [REPORT.html ...] [-o PNG_DIR]" >&2
    exit 2
}

out_dir=.
reports=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) [ $# -ge 2 ] || usage; out_dir=$2; shift 2 ;;
        -h|--help) usage ;;
        *) reports+=("$1"); shift ;;
    esac
done
[ ${#reports[@]} -gt 0 ] || usage

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "$0: chromium not found (install it: apt-get install -y chromium)" >&2
    exit 1
fi
mkdir -p "$out_dir"

for report in "${reports[@]}"; do
    if [ ! -f "$report" ]; then
        echo "$0: $report: no such file (run \`mantissa report OUT_DIR\` first)" >&2
        exit 1
    fi
    name=$(basename "$(cd "$(dirname "$report")" && pwd)")
    png="$out_dir/$name.png"
    profile=$(mktemp -d)
    # A throwaway profile and no network: the report is self-contained and must render offline.
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --hide-scrollbars \
        --screenshot="$png" --window-size=1280,900 \
        "file://$(cd "$(dirname "$report")" && pwd)/$(basename "$report")" >/dev/null 2>&1 || {
        rm -rf "$profile"
        echo "$0: chromium failed on $report" >&2
        exit 1
    }
    rm -rf "$profile"
    [ -s "$png" ] || { echo "$0: no screenshot written for $report" >&2; exit 1; }
    echo "$png"
done
