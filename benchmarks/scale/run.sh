#!/usr/bin/env bash
# The scale run: index the corpus of benchmarks/scale/corpus.py chunk by chunk into one store, with the
# spaCy graph stored beside it; each chunk timed by /usr/bin/time -v (peak memory) and its summary kept.
#   benchmarks/scale/run.sh CORPUS_DIR STORE_SPEC OUT_DIR [CACHE_DIR]
# e.g. benchmarks/scale/run.sh /work/scale/corpus 'faiss:/work/scale/faiss/store#HNSW32' runs/scale/faiss
# Resumable: a chunk whose log ends with its summary is skipped.
set -uo pipefail
corpus=$1; spec=$2; out=$3; cache=${4:-$out/cache}
mkdir -p "$out" "$cache"
export HAYSTACK_TELEMETRY_ENABLED=False CFRAG_CACHE_DIR=$cache TQDM_DISABLE=1
for part in "$corpus"/part-*.jsonl; do
  name=$(basename "$part" .jsonl)
  log="$out/$name.log"
  if [ -f "$log" ] && grep -q "^graph:" "$log"; then continue; fi
  start=$(date +%s.%N)
  /usr/bin/time -v cfrag index "$part" --store "$spec" --graph --extractor spacy > "$log" 2>&1
  echo "chunk_wall_s $(echo "$(date +%s.%N) - $start" | bc)" >> "$log"
  du -sb "$(dirname "${spec#*:}")" | sed 's/^/disk_bytes /' >> "$log"
done
