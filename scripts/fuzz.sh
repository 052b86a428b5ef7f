#!/bin/sh
# Coverage-guided fuzzing with cargo-fuzz (libFuzzer): runs every target of
# fuzz/ in turn, FUZZ_SECONDS each (default 600), or only the targets given
# as arguments. Installs the nightly toolchain (cargo-fuzz needs its -Z
# flags) and cargo-fuzz when missing. One libFuzzer process at a time, at
# the lowest priority. New inputs go to fuzz/target/corpus/<target> (not
# committed; the seeds under fuzz/corpus/<target> are only read); a crash
# is saved under fuzz/artifacts/<target>/ and stops the run.
#
# FUZZ_SANITIZER=address builds with AddressSanitizer (slower; the code
# fuzzed is safe Rust, so the default is none). Extra libFuzzer flags:
# FUZZ_ARGS="-max_len=8192".
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${FUZZ_SECONDS:-600}"
sanitizer="${FUZZ_SANITIZER:-none}"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "installing: the nightly toolchain (rustup, minimal profile)" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing: cargo-fuzz (cargo install)" >&2
    cargo install cargo-fuzz
fi

cd "$root/fuzz"
if [ "$#" -gt 0 ]; then
    targets="$*"
else
    targets="$(cargo +nightly fuzz list)"
fi

for target in $targets; do
    echo "fuzzing $target for ${seconds}s (sanitizer: $sanitizer)" >&2
    mkdir -p "$root/fuzz/target/corpus/$target"
    # shellcheck disable=SC2086
    nice -n 19 cargo +nightly fuzz run --sanitizer "$sanitizer" "$target" \
        "$root/fuzz/target/corpus/$target" "$root/fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 ${FUZZ_ARGS:-}
done
