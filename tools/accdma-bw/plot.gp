# plot.gp - accdma-bw CSV -> PNG: per-device bandwidth against message size,
# one curve per mode in the CSV (chain, fence, sync), plus the memcpy reference
# of the same run.
# Usage: gnuplot -e "csv='bw.csv'; png='bw.png'" tools/accdma-bw/plot.gp
if (!exists("csv")) csv = 'build/accdma-bw.csv'
if (!exists("png")) png = 'build/accdma-bw.png'

set datafile separator ","
# column names of the CSV header
pattern = system(sprintf("awk -F, 'NR==2{print $1; exit}' '%s'", csv))
devices = system(sprintf("awk -F, 'NR==2{print $5; exit}' '%s'", csv))
modes = system(sprintf("awk -F, 'NR>1{print $2}' '%s' | awk '!seen[$0]++' | tr '\\n' ' '", csv))

set terminal pngcairo size 1000,620 enhanced font ",10"
set output png
set title sprintf("accdma-bw: %s, %s devices (per-device bandwidth, median of runs)", pattern, devices)
set xlabel "message size [bytes]"
set ylabel "bandwidth per device [GB/s]"
set logscale x 2
set logscale y 10
set format x "2^{%L}"
set grid xtics ytics mxtics mytics
set key bottom right
set style data linespoints

# one data stream per mode (rows of modes alternate in the CSV; 1/0 gaps would break the lines)
rows(m) = sprintf("< awk -F, 'NR > 1 && $2 == \"%s\"' '%s'", m, csv)
first = word(modes, 1)

plot for [m in modes] rows(m) using 3:10 title m lw 2 pt 7 ps 0.8, \
     rows(first) using 3:(strlen(strcol(15)) > 0 ? column(15) : 1/0) \
        title "memcpy reference (same threads, same slots)" dt 2 lw 1.5 lc rgb "gray40" pt 1
