#!/bin/sh
# Makes the README's picture from the program as it is: the incident run headless and recorded,
# its last second exported as a slide (docs/dashboard.svg) and drawn as a PNG
# (docs/dashboard.png, with rsvg-convert from librsvg2-bin). Run from the repository's root:
#
#     cargo build --release && sh docs/picture.sh
#
# `export::the_readme_picture_is_what_its_script_makes_today` (tests/it/export.rs) checks that the
# SVG still says what this script makes in its header, caption and lanes (not its charts or its
# timeline box, which differ a little from run to run), so a change to those that leaves the
# picture behind fails the suite.
set -eu
reclaim=${RECLAIM:-target/release/reclaim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The night fails (naive's rows are wrong): exit 1 is its verdict, not an error.
"$reclaim" run --scenario incident --keep never --record "$work/night.jsonl" >/dev/null || [ $? -eq 1 ]
"$reclaim" replay "$work/night.jsonl" --export "$work/dashboard.svg" --at 02:19:31 --size 120x40 >/dev/null
rsvg-convert -o "$work/dashboard.png" "$work/dashboard.svg"
mv "$work/dashboard.svg" docs/dashboard.svg
mv "$work/dashboard.png" docs/dashboard.png
echo "docs/dashboard.svg and docs/dashboard.png made by $reclaim"
