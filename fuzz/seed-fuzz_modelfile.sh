#!/bin/sh
# Seeds for the model file reader: a model file written by the library
# (every shipped model through model_copy + model_file_write, via the test).
dir="$1"
cat >"$dir/seed0" <<'M'
dcpi-model 1
cpu AuthenticAMD 26 2 1
base zen5
port alu6 measured 2026-11-23 by probe tp.add
param load_lat 4 measured 2026-11-23 by probe lat.load
param alu_ports alu0,alu1,alu2,alu3,alu4,alu5,alu6 measured
class fadd lat 2 measured 2026-11-23 by probe lat.fadd
class fadd ports fp2,fp3 shipped
class imul busy 1 shipped
M
printf 'class div64 lat 14\nparam rob_size 448\nport x\n' >"$dir/seed1"
exit 0
