#!/bin/sh
# Lists the commits merged since the last tag, one per line.
git log --merges --format='%s' "$(git describe --tags --abbrev=0)..HEAD"
