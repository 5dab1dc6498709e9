#!/bin/bash
# waits for /tmp/bench-done (poll 30 s, give up after 40 min from wait-start), then measures on CPU 1
cd /tmp/deflate-measure
start=$(cat wait-start)
while [ ! -e /tmp/bench-done ]; do
  now=$(date +%s)
  if [ $((now - start)) -ge 2400 ]; then echo "GAVE UP WAITING at $(date -u)" > waited.txt; break; fi
  sleep 30
done
[ -e /tmp/bench-done ] && echo "bench-done seen at $(date -u)" > waited.txt
echo "start $(date -u); load: $(cat /proc/loadavg)" >> waited.txt
for m in comp decomp zgrid bomb; do
  taskset -c 1 ./bench $m > $m.txt 2> $m.err
  echo "$m done $(date -u); load: $(cat /proc/loadavg)" >> waited.txt
done
echo finished >> waited.txt
