#!/bin/bash
cd /tmp/deflate-measure; mkdir -p run2
echo "run2 start $(date -u); load $(cat /proc/loadavg)" > run2/log.txt
for m in fixed comp decomp zgrid bomb; do
  taskset -c 1 ./bench $m > run2/$m.txt 2> run2/$m.err
  echo "$m done $(date -u); load $(cat /proc/loadavg); top: $(ps -eo pcpu,args --sort=-pcpu | sed -n 2,3p | tr '\n' ';')" >> run2/log.txt
done
echo finished >> run2/log.txt
