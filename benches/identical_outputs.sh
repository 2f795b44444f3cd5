#!/bin/bash
# Write what the CLI prints for three studies and 603 runs into OUTDIR, so that a speed
# change can be shown to change no result: run it with the build before and the build
# after, then `diff -r BEFORE AFTER` (empty: byte-identical).
#
#   benches/identical_outputs.sh /tmp/before   # (build A installed in .venv)
#   benches/identical_outputs.sh /tmp/after    # (build B)
#   diff -r /tmp/before /tmp/after
#
# The runs: three drives (two SSDs, an HDD) on md, the PERC 6/i and a MegaRAID 9361
# (write-back and write-through cache), RAID 5, 6, 1 and 10 of 4, random and sequential
# reads and writes and a mix, QD 1 and 32; then a degraded RAID 5 rebuilding, RAID 6 of 6
# with mixed block sizes and 4 jobs, and RAID 5 behind mq-deadline.
set -u
out=$1; mkdir -p "$out"
R=${RAIDLAB:-.venv/bin/raidlab}
$R reproduce ssd-raid-tuning --format json > "$out/ssd-raid-tuning.json" 2>&1
$R reproduce raidix-cache > "$out/raidix-cache.txt" 2>&1
$R reproduce ssd-raid0-atto --format json > "$out/ssd-raid0-atto.json" 2>&1
i=0
for drive in adata-sp900-128g intel-dc-s3500-80g hitachi-deskstar-250g; do
 for ctl in linux-md dell-perc6i megaraid-9361; do
  for level in 5 6 1 10; do
   for rw in randwrite randread randrw write read; do
    for qd in 1 32; do
     for wc in wb wt; do
      [ "$ctl" = linux-md ] && [ "$wc" = wb ] && continue
      ios=20000; [ "$drive" = hitachi-deskstar-250g ] && ios=3000
      f="$out/run-$drive-$ctl-$level-$rw-$qd-$wc.json"
      extra=""; [ "$ctl" != linux-md ] && extra="--write-cache $wc"
      $R run --drive $drive --controller $ctl --level $level --drives 4 --rw $rw --bs 4K --iodepth $qd --ios $ios $extra --format json > "$f" 2>&1
      i=$((i+1))
     done
    done
   done
  done
 done
done
# a failed member with rebuild, serial posting, scheduler
$R run --drive intel-dc-s3500-80g --controller linux-md --level 5 --drives 4 --failed 1 --rebuild-rate 200M --rw randrw --iodepth 16 --ios 20000 --format json > "$out/degraded.json" 2>&1
$R run --drive adata-sp900-128g --controller linux-md --level 6 --drives 6 --rw randwrite --bs 4K:55,64K:25,128K:20 --iodepth 16 --numjobs 4 --ios 20000 --format json > "$out/mix6.json" 2>&1
$R run --drive adata-sp900-128g --controller linux-md --level 5 --drives 4 --rw randwrite --iodepth 32 --scheduler mq-deadline --ios 20000 --format json > "$out/sched.json" 2>&1
echo "runs: $i"
