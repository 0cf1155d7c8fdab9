# The setup the GPU scripts share (sourced by gpu_evidence.sh and
# gpu_vc_ptb.sh, which define MODE, WORK, LOG and say): wheels in .whl/
# installed first, the copy made a checkout of the carried bundle's commit,
# and the commit, the GPU and the package versions logged.
if compgen -G '.whl/*.whl' > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl >> "$LOG" 2>&1
  export PYTHONPATH=/tmp/site
fi
# The device's copy of the tree may hold no .git, or the .git of an earlier
# commit beside today's files: HEAD is made the bundle's commit (the files
# stay as they came), so a tree sent clean reads clean.
# Not in the quick smoke test: on a CPU it runs in the developer's own
# checkout, whose HEAD a stale bundle would move.
if [[ $MODE != quick && -f .gpu/repo.bundle ]]; then
  { git rev-parse --git-dir > /dev/null 2>&1 || git init -q .; } \
    && git config core.fileMode false \
    && git fetch -q .gpu/repo.bundle HEAD && git reset -q FETCH_HEAD \
    && printf '.gpu/\n.whl/\n' >> "$(git rev-parse --git-dir)/info/exclude"
fi
say "commit $(git rev-parse --short HEAD 2>/dev/null || echo none)," \
    "changed files: $(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
nvidia-smi > "$WORK/logs/nvidia-smi.txt" 2>&1
