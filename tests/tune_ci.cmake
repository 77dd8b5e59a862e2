# hpipe-tune end to end with a tiny search space (cmake -P; run by ctest, see tests/CMakeLists.txt):
#   TUNE       the hpipe-tune executable
#   GENERATOR  the hpipe_generators executable
#   SOURCE     the source tree
#   WORK       a scratch directory (emptied)
#   STEP       defaults | tune | bundle
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(db "${WORK}/db.jsonl")

function(run expect_rc)  # run(<rc> command...) -> out, err in the caller
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if (NOT rc STREQUAL expect_rc)
    message(FATAL_ERROR "exit ${rc}, expected ${expect_rc}: ${ARGN}\n${o}\n${e}")
  endif ()
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()

function(expect_in text what)
  # CMake wraps message() text at a width that depends on path lengths: compare with spaces folded.
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
  string(FIND "${text}" "${what}" at)
  if (at EQUAL -1)
    message(FATAL_ERROR "expected '${what}' in:\n${text}")
  endif ()
endfunction()

function(split_case case input expected)  # "INPUT|EXPECTED" (split at the last '|') -> input, expected
  string(FIND "${case}" "|" bar REVERSE)
  string(SUBSTRING "${case}" 0 ${bar} first)
  math(EXPR bar "${bar} + 1")
  string(SUBSTRING "${case}" ${bar} -1 second)
  set(${input} "${first}" PARENT_SCOPE)
  set(${expected} "${second}" PARENT_SCOPE)
endfunction()

function(count_lines file match result)  # lines of `file` containing every string in `match` (a list)
  file(STRINGS "${file}" lines)
  set(n 0)
  foreach (line IN LISTS lines)
    set(all TRUE)
    foreach (m IN LISTS match)
      string(FIND "${line}" "${m}" at)
      if (at EQUAL -1)
        set(all FALSE)
      endif ()
    endforeach ()
    if (all)
      math(EXPR n "${n} + 1")
    endif ()
  endforeach ()
  set(${result} ${n} PARENT_SCOPE)
endfunction()

if (STEP STREQUAL "defaults")
  # Output that cannot be written is an error (it exited 0).
  execute_process(COMMAND "${TUNE}" list RESULT_VARIABLE rc OUTPUT_FILE /dev/full ERROR_VARIABLE e)
  if (NOT rc EQUAL 1)
    message(FATAL_ERROR "hpipe-tune list > /dev/full: exit ${rc}, expected 1\n${e}")
  endif ()
  expect_in("${e}" "hpipe-tune: error: cannot write to standard output")
  # Bad option values name the option, what it takes and what was given (--budget abc said only
  # "stod"; -1m, 0, -j 0 and --max-variants 0 were taken).
  foreach (case "--budget;abc;a duration > 0" "--budget;-1m;a duration > 0" "--budget;0;a duration > 0"
                "--budget;10x;a duration > 0" "--min-time;-1;a number of seconds > 0"
                "--max-variants;0;an integer from 1 to" "--max-variants;2.5;an integer from 1 to"
                "-j;0;an integer from 1 to" "-j;many;an integer from 1 to")
    list(GET case 0 option)
    list(GET case 1 value)
    list(GET case 2 expected)
    run(2 "${TUNE}" list ${option} ${value})
    expect_in("${err}" "hpipe-tune: ${option}: expected ${expected}")
    expect_in("${err}" "got '${value}'")
  endforeach ()
  # Files that cannot be read are named as such.
  run(2 "${TUNE}" defaults --check "${WORK}/no/such.json")
  expect_in("${err}" "hpipe-tune: --check ${WORK}/no/such.json: cannot read it")
  run(2 "${TUNE}" report --db "${WORK}/no/such.jsonl")
  expect_in("${err}" "hpipe-tune: --db ${WORK}/no/such.jsonl: cannot read it")
  # A file that cannot be written is an error, not "wrote" (exit 0).
  run(1 "${TUNE}" defaults --out "${WORK}/no/such/dir/knobs.json")
  expect_in("${err}" "hpipe-tune: error: --out ${WORK}/no/such/dir/knobs.json: cannot write: No such file")
  # The shipped default knobs are the C++ defaults, and configure-time checks reject bad files.
  run(0 "${TUNE}" defaults --check "${SOURCE}/cmake/default_knobs.json")
  run(0 "${CMAKE_COMMAND}" -D FILE=${SOURCE}/cmake/default_knobs.json -D DEFAULTS=${SOURCE}/cmake/default_knobs.json
      -P "${SOURCE}/cmake/HpipeTuning.cmake")
  file(READ "${SOURCE}/cmake/default_knobs.json" good)
  string(REPLACE "\"rows_per_task\"" "\"rows_per_tusk\"" bad "${good}")
  file(WRITE "${WORK}/bad_knob.json" "${bad}")
  string(REPLACE "\"cassi_phi\"" "\"cassi_psi\"" bad "${good}")
  file(WRITE "${WORK}/bad_op.json" "${bad}")
  string(REPLACE "\"block_w\": 32" "\"block_w\": \"wide\"" bad "${good}")
  file(WRITE "${WORK}/bad_value.json" "${bad}")
  string(REPLACE "\"block_w\": 32" "\"block_w\": \"32\"" bad "${good}")  # an integer in a string
  file(WRITE "${WORK}/quoted_value.json" "${bad}")
  foreach (case bad_knob:unknown\ knob\ 'rows_per_tusk' bad_op:unknown\ op\ 'cassi_psi' bad_value:needs\ an\ integer
                quoted_value:needs\ an\ integer,\ got\ the\ string\ '32')
    string(REPLACE ":" ";" parts "${case}")
    list(GET parts 0 name)
    list(GET parts 1 message)
    run(1 "${CMAKE_COMMAND}" -D FILE=${WORK}/${name}.json -D DEFAULTS=${SOURCE}/cmake/default_knobs.json
        -P "${SOURCE}/cmake/HpipeTuning.cmake")
    expect_in("${err}" "${message}")
  endforeach ()
  # CUDA blocks of 65536 x 65536 threads: valid() multiplied in int, which wrapped to 0 and passed.
  foreach (case "cassi_forward:block_w:65536,block_h:65536" "tv_chambolle:block_w:65536,block_h:65536"
                "conv1d:block_k:65536,block_rows:65536")
    string(FIND "${case}" ":" colon)
    string(SUBSTRING "${case}" 0 ${colon} op)
    math(EXPR colon "${colon} + 1")
    string(SUBSTRING "${case}" ${colon} -1 knobs)
    file(WRITE "${WORK}/huge.jsonl" "{\"op\":\"${op}\",\"backend\":\"cuda\",\"target\":\"host-cuda\",\"machine\":\"Test GPU\",\"scheduler\":\"knobs\",\"shape\":\"N=2\",\"knobs\":\"${knobs}\",\"status\":\"ok\",\"time_ms\":1}\n")
    run(2 "${TUNE}" import "${WORK}/huge.jsonl" --db "${WORK}/imported.jsonl")
    expect_in("${err}" "huge.jsonl:1: knobs '${knobs}' of ${op} on cuda are not this build's: knobs '${knobs}' are not a legal combination")
  endforeach ()

  # The generator rejects an illegal combination with the reason.
  run(1 "${GENERATOR}" -g cassi_forward_f32 -o "${WORK}" -e o target=host "knobs=vector_factor:0")
  expect_in("${err}" "not a legal combination")

  # Configure-time errors on a file of the wrong shape name the file and the member (they were
  # CMake's own "string sub-command JSON MEMBER needs ... OBJECT", without the file).
  foreach (case "[1,2]|\"kernels\" must be a JSON object, got the JSON type array"
                "{\"batched_dot\": {\"cpu\": 5}}|the cpu knobs of batched_dot must be a JSON object, got the JSON type number"
                "{\"batched_dot\": \"x\"}|op 'batched_dot' must be a JSON object"
                "{\"batched_dot\": {\"cpu\": {\"chunks_per_task\": 99999999999}}}|knob 'chunks_per_task' of batched_dot on cpu needs a 32-bit integer, got '99999999999'")
    split_case("${case}" kernels message)
    file(WRITE "${WORK}/shape.json" "{\"format\": \"hpipe-knobs/1\", \"kernels\": ${kernels}}")
    run(1 "${CMAKE_COMMAND}" -D FILE=${WORK}/shape.json -D DEFAULTS=${SOURCE}/cmake/default_knobs.json
        -P "${SOURCE}/cmake/HpipeTuning.cmake")
    expect_in("${err}" "HPIPE_TUNING_FILE ${WORK}/shape.json: ${message}")
  endforeach ()

  # Usage mistakes that did something else: --ops "" or "," tuned every op, a word after export or
  # report was ignored (export wrote tuned_knobs.json, report read the default database), a
  # budget of 1e7h overflowed the clock and tuned nothing, --out with --check was ignored.
  foreach (ops "" ",")  # execute_process keeps an empty argument, which run()'s ARGN drops
    execute_process(COMMAND "${TUNE}" tune --ops "${ops}" --db "${WORK}/ops.jsonl" RESULT_VARIABLE rc ERROR_VARIABLE err)
    if (NOT rc EQUAL 2)
      message(FATAL_ERROR "tune --ops '${ops}': exit ${rc}, expected 2\n${err}")
    endif ()
    expect_in("${err}" "hpipe-tune: --ops: expected op names joined by commas (see hpipe-tune list), got '${ops}'")
  endforeach ()
  run(2 "${TUNE}" export mine.json)
  expect_in("${err}" "hpipe-tune: export: unexpected argument 'mine.json' (the output is --out FILE)")
  run(2 "${TUNE}" report other.jsonl)
  expect_in("${err}" "hpipe-tune: report: unexpected argument 'other.jsonl' (the database is --db FILE)")
  run(2 "${TUNE}" tune --budget 1e7h --db "${WORK}/budget.jsonl")
  expect_in("${err}" "hpipe-tune: --budget: expected a duration of at most a year (8760h), got '1e7h'")
  run(2 "${TUNE}" bundle --out "${WORK}/bundle" --min-time 1)  # the bundle's own option: it was ignored
  expect_in("${err}" "hpipe-tune: bundle: --min-time is the bundle's own option (./hpipe-tune-bundle --min-time S)")
  run(2 "${TUNE}" bundle --out "${WORK}/bundle" --budget 1m)
  expect_in("${err}" "hpipe-tune: bundle: --budget applies to tune")
  run(2 "${TUNE}" defaults --out "${WORK}/d.json" --check "${SOURCE}/cmake/default_knobs.json")
  expect_in("${err}" "defaults takes --out FILE (write) or --check FILE (compare), not both")

  # tune --target runs the variants in this process: another architecture segfaulted, x86-32 hit a
  # Halide internal error, a CUDA target failed every variant and exited 0. Refused up front.
  foreach (case "arm-64-linux:tune runs the variants here (JIT), so it takes this host's"
                "x86-32-linux:tune runs the variants here (JIT), so it takes this host's"
                "host-cuda:tune measures CPU schedules, got the device target 'host-cuda'")
    string(REPLACE ":" ";" parts "${case}")
    list(GET parts 0 target)
    list(GET parts 1 message)
    run(2 "${TUNE}" tune --target ${target} --ops batched_dot --size small --db "${WORK}/target.jsonl")
    expect_in("${err}" "hpipe-tune: --target: ${message}")
    if (EXISTS "${WORK}/target.jsonl")
      message(FATAL_ERROR "tune --target ${target} wrote records")
    endif ()
  endforeach ()

  # HL_NUM_THREADS is read as the runtime reads it (runtime/src/device.cpp): a value atoi() does
  # not make > 0 means the cores (the tuner took 1), a larger one is capped at 1024.
  run(1 "${CMAKE_COMMAND}" -E env --unset=HL_NUM_THREADS "${TUNE}" export --db "${WORK}/none.jsonl")
  string(REGEX MATCH "\\(([0-9]+) threads\\)" unused "${err}")
  set(cores "${CMAKE_MATCH_1}")
  foreach (case "abc:${cores}" "0:${cores}" "-3:${cores}" "7abc:7" "5000:1024")
    string(REPLACE ":" ";" parts "${case}")
    list(GET parts 0 value)
    list(GET parts 1 threads)
    run(1 "${CMAKE_COMMAND}" -E env HL_NUM_THREADS=${value} "${TUNE}" export --db "${WORK}/none.jsonl")
    expect_in("${err}" "(${threads} threads)")
  endforeach ()

  # Writes of --out are atomic: a write that fails (here past a file size limit of 0) leaves the
  # previous file as it was and nothing beside it (it was truncated to 0 bytes).
  find_program(SH sh)
  if (SH)
    file(WRITE "${WORK}/previous.json" "previous\n")
    # (&&, not ;, which run() would split into arguments)
    run(1 "${SH}" -c "ulimit -f 0 && trap '' XFSZ && exec \"$0\" defaults --out \"$1\"" "${TUNE}" "${WORK}/previous.json")
    expect_in("${err}" "hpipe-tune: error: --out ${WORK}/previous.json: cannot write: File too large")
    file(READ "${WORK}/previous.json" previous)
    file(GLOB left "${WORK}/previous.json.*")
    if (NOT previous STREQUAL "previous\n" OR left)
      message(FATAL_ERROR "a failed defaults --out changed the file to '${previous}' or left ${left}")
    endif ()
  endif ()

  # Records by hand (a GPU host's), of batched_dot on CUDA.
  set(gpu "{\"op\":\"batched_dot\",\"backend\":\"cuda\",\"target\":\"host-cuda\",\"machine\":\"Test GPU\",\"scheduler\":\"knobs\"")
  set(ok "\"status\":\"ok\",\"max_error\":0.5")
  # export takes the shape most recently measured (it took the shape of the first variant seen):
  # rows_per_block 256 is faster, but at shape N=1, measured before N=2 again.
  file(WRITE "${WORK}/shapes.jsonl"
       "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_block:64\",${ok},\"time_ms\":0.5}\n"
       "${gpu},\"shape\":\"N=1\",\"knobs\":\"rows_per_block:256\",${ok},\"time_ms\":0.1}\n"
       "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_block:64\",${ok},\"time_ms\":0.5,\"phase\":\"confirm\"}\n")
  run(0 "${TUNE}" export --db "${WORK}/shapes.jsonl" --out "${WORK}/shapes.json")
  file(READ "${WORK}/shapes.json" exported)
  expect_in("${exported}" "\"cuda\": {\"rows_per_block\": 64}")
  # An output that is the input database is refused (it overwrote the database), by any path.
  file(SIZE "${WORK}/shapes.jsonl" size_before)
  get_filename_component(work_name "${WORK}" NAME)
  run(2 "${TUNE}" export --db "${WORK}/shapes.jsonl" --out "${WORK}/../${work_name}/shapes.jsonl")
  expect_in("${err}" "expected a file other than the input --db ${WORK}/shapes.jsonl, which it would overwrite")
  file(SIZE "${WORK}/shapes.jsonl" size_after)
  if (NOT size_before EQUAL size_after)
    message(FATAL_ERROR "export --out <its --db> changed the database")
  endif ()

  # A record appended after a line cut short (a killed run) starts a line of its own (it was glued
  # to the cut line and lost with it).
  file(WRITE "${WORK}/cut.jsonl" "${gpu},\"shape\":\"N=2\",\"kno")
  file(WRITE "${WORK}/one.jsonl" "${gpu},\"shape\":\"N=3\",\"knobs\":\"rows_per_block:32\",${ok},\"time_ms\":0.5}\n")
  run(0 "${TUNE}" import "${WORK}/one.jsonl" --db "${WORK}/cut.jsonl")
  run(0 "${TUNE}" report --db "${WORK}/cut.jsonl")
  expect_in("${out}" "rows_per_block:32")
  expect_in("${err}" "cut.jsonl:1: skipped, not a record ('\"' expected at column")

  # import refuses a file with a record no measurement makes, naming the file, the line, the field,
  # what it takes and what it has (they were imported, won the report and were exported; "abc" as
  # a number said "stod", \uZZZZ "stoi", a knob value "abc" "another hpipe version's results?").
  set(base "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_block:64\"")
  foreach (case "${base},${ok},\"time_ms\":-1}|field \"time_ms\": expected a finite number >= 0, got '-1'"
                "${base},${ok},\"time_ms\":nan}|field \"time_ms\": expected a finite number >= 0, got 'nan'"
                "${base},\"status\":\"ok\",\"max_error\":1e300,\"time_ms\":1}|field \"max_error\": a verified record (status ok) is within the tolerance (at most 1), got 1e+300"
                "${base},\"status\":\"fine\",\"time_ms\":1}|field \"status\": expected one of ok, wrong, failed, got \"fine\""
                "${base},${ok},\"time_ms\":1,\"threads\":1e20}|field \"threads\": expected an integer from 0 to 1024, got '1e20'"
                "${base},${ok},\"time_ms\":1,\"threads\":abc}|field \"threads\": expected an integer from 0 to 1024, got 'abc'"
                "${base},${ok},\"time_ms\":1} trailing|unexpected text after the closing '}' at column"
                "${base},${ok},\"time_ms\":1,\"error\":\"\\uZZZZ\"}|a \\u escape at column"
                "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_block:64,rows_per_block:32\",${ok},\"time_ms\":1}|knob 'rows_per_block' is given twice"
                "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_blocks:64\",${ok},\"time_ms\":1}|unknown knob 'rows_per_blocks'"
                "${gpu},\"shape\":\"N=2\",\"knobs\":\"rows_per_block:abc\",${ok},\"time_ms\":1}|knob 'rows_per_block:abc' is not name:value with an integer value")
    split_case("${case}" line message)
    file(WRITE "${WORK}/bad.jsonl" "${base},${ok},\"time_ms\":1}\n${line}\n")
    run(2 "${TUNE}" import "${WORK}/bad.jsonl" --db "${WORK}/imported.jsonl")
    expect_in("${err}" "${WORK}/bad.jsonl:2: ")
    expect_in("${err}" "${message}")
    if (EXISTS "${WORK}/imported.jsonl")
      message(FATAL_ERROR "a refused import wrote ${WORK}/imported.jsonl")
    endif ()
  endforeach ()
elseif (STEP STREQUAL "tune")
  # A subset of the ops (--ops) keeps the test well under a minute on 2 cores: two CASSI ops (the
  # export and corruption checks below use them), the dot product, admm_tv_step for float
  # scalars and a Tuple output, and math_logsumexp for the math family (its export is read
  # back below). (The bundle step covers gap_tv_step's two outputs.)
  set(ops cassi_forward cassi_adjoint batched_dot admm_tv_step math_logsumexp)
  string(REPLACE ";" "," ops_option "${ops}")
  set(tiny --size small --max-variants 2 --strategy exhaustive --no-autoschedulers --min-time 0.005 --no-progress)
  run(0 "${TUNE}" tune --db "${db}" --ops ${ops_option} ${tiny})
  run(0 "${TUNE}" list)
  foreach (op IN LISTS ops)
    expect_in("${out}" "${op}")
    count_lines("${db}" "\"op\":\"${op}\";\"status\":\"ok\";\"phase\":\"search\"" n)
    if (NOT n EQUAL 2)
      message(FATAL_ERROR "${op}: ${n} verified variants in ${db}, expected 2")
    endif ()
  endforeach ()

  # --budget bounds the whole command: over every op with the autoschedulers, --budget 1s ran past
  # 60 s (the default, the autoschedulers and the confirm step ignored it). Now the first op
  # measures its default, and nothing else starts.
  string(TIMESTAMP t0 "%s")
  run(0 "${TUNE}" tune --db "${WORK}/budget.jsonl" --budget 0.01s --size small --min-time 0.005 --no-progress)
  string(TIMESTAMP t1 "%s")
  math(EXPR took "${t1} - ${t0}")
  if (took GREATER 45)
    message(FATAL_ERROR "tune --budget 0.01s took ${took} s")
  endif ()
  expect_in("${err}" "--budget spent; not tuned: ")
  count_lines("${WORK}/budget.jsonl" "\"phase\":" measured)
  count_lines("${WORK}/budget.jsonl" "\"is_default\":true;\"phase\":\"search\"" defaults)
  if (NOT measured EQUAL 1 OR NOT defaults EQUAL 1)
    message(FATAL_ERROR "tune --budget 0.01s: ${measured} records (${defaults} of a default), expected the first op's default alone")
  endif ()

  # Within one op, no compile or measurement starts that would end past the deadline (when a
  # batch's compiles all ran once it started, --budget 6s took 7.9 s here on a 2-core Zen 3).
  string(TIMESTAMP t0 "%s")
  # -j beyond the cores ran compiles that shared them, each longer than the estimate (-j 8 on 2 cores
  # took 50 s of a 20 s budget): it is held to the cores.
  run(0 "${TUNE}" tune --db "${WORK}/budget_op.jsonl" --ops cassi_forward --budget 8s --size small --min-time 0.005
      --no-autoschedulers --no-progress -j 1024)
  string(TIMESTAMP t1 "%s")
  math(EXPR took "${t1} - ${t0}")
  # The default is compiled and measured whatever the budget: under AddressSanitizer (make
  # test-sanitize) its compile alone took 9.8 s here (the whole command 10-11 s; 13 s on CI), so
  # the bound is the later of the budget and the default's compile, plus 3 s (start, the leak
  # check at exit, whole seconds).
  file(STRINGS "${WORK}/budget_op.jsonl" default_record REGEX "\"is_default\":true" LIMIT_COUNT 1)
  string(JSON default_compile_s GET "${default_record}" compile_s)
  string(REGEX REPLACE "\\..*" "" default_compile_s "${default_compile_s}")  # whole seconds, rounded down
  set(bound 8)
  if (default_compile_s GREATER_EQUAL bound)
    math(EXPR bound "${default_compile_s} + 1")
  endif ()
  math(EXPR bound "${bound} + 3")
  if (took GREATER bound)
    message(FATAL_ERROR "tune --ops cassi_forward --budget 8s -j 1024 took ${took} s, more than ${bound} s "
                        "(the default's compile took ${default_compile_s} s)")
  endif ()
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  if (cores LESS 1024)
    expect_in("${err}" "hpipe-tune: -j 1024 is more than the ")
  endif ()

  # Resume: nothing is measured again.
  count_lines("${db}" "\"phase\":\"search\"" before)
  run(0 "${TUNE}" tune --db "${db}" --resume --ops cassi_forward,batched_dot ${tiny})
  count_lines("${db}" "\"phase\":\"search\"" after)
  if (NOT before EQUAL after)
    message(FATAL_ERROR "--resume measured again: ${before} search records before, ${after} after")
  endif ()
  expect_in("${err}" "resumed")

  # --resume where the default's latest record is not verified and 5 knob variants are: the
  # re-measurement swapped the default in from past the end of the list (a segfault). A record with
  # knobs this build cannot read is skipped, named by file and line (it stopped the tune, unnamed).
  set(resume_db "${WORK}/resume.jsonl")
  set(resume_options --db "${resume_db}" --ops batched_dot,batched_dot --size small --max-variants 6
                     --strategy exhaustive --no-autoschedulers --min-time 0.005 --no-progress)
  run(0 "${TUNE}" tune ${resume_options})
  string(REGEX MATCHALL "hpipe-tune: batched_dot \\(" tuned "${err}")  # an op named twice was tuned twice
  list(LENGTH tuned tuned)
  if (NOT tuned EQUAL 1)
    message(FATAL_ERROR "--ops batched_dot,batched_dot tuned batched_dot ${tuned} times:\n${err}")
  endif ()
  file(STRINGS "${resume_db}" defaults REGEX "\"is_default\":true")
  list(GET defaults 0 default)
  string(REPLACE "\"status\":\"ok\"" "\"status\":\"wrong\"" wrong "${default}")
  string(REGEX REPLACE "\"knobs\":\"[^\"]*\"" "\"knobs\":\"chunks_per_task:8x\"" unreadable "${default}")
  file(APPEND "${resume_db}" "${wrong}\n")
  run(0 "${TUNE}" tune --resume ${resume_options})
  file(APPEND "${resume_db}" "${unreadable}\n")
  file(STRINGS "${resume_db}" lines)
  list(LENGTH lines unreadable_line)
  run(0 "${TUNE}" tune --resume ${resume_options})
  expect_in("${err}" "resume.jsonl:${unreadable_line}: skipped, knobs 'chunks_per_task:8x' of batched_dot on cpu are not this build's: knob 'chunks_per_task:8x' is not name:value with an integer value")

  # A deliberately wrong variant is discarded by verification and never exported.
  run(0 "${TUNE}" tune --db "${db}" --ops cassi_adjoint --inject-wrong --size small --max-variants 1
      --no-autoschedulers --min-time 0.005 --no-progress)
  count_lines("${db}" "\"scheduler\":\"test-corrupt\";\"status\":\"wrong\"" wrong)
  if (NOT wrong EQUAL 1)
    message(FATAL_ERROR "the corrupted variant was not discarded (${wrong} wrong records)")
  endif ()
  run(0 "${TUNE}" report --db "${db}")
  expect_in("${out}" "discarded")

  # Import of bundle results (a GPU host's records, written here by hand): appended once, and
  # their best knobs become the file's cuda knobs.
  set(gpu "{\"op\":\"cassi_forward\",\"type\":\"f32\",\"backend\":\"cuda\",\"shape\":\"B=2,C=6,H=32,W=48,S=2,axis=w,mask=shared\",\"target\":\"x86-64-linux-cuda-cuda_capability_80-sse41-user_context\",\"machine\":\"Test GPU\",\"threads\":0,\"scheduler\":\"knobs\"")
  file(WRITE "${WORK}/results.jsonl"
       "${gpu},\"knobs\":\"block_w=32,block_h=8\",\"is_default\":true,\"status\":\"ok\",\"time_ms\":0.5}\n"
       "${gpu},\"knobs\":\"block_w=64,block_h=4\",\"status\":\"ok\",\"time_ms\":0.25}\n"
       "${gpu},\"knobs\":\"block_w=16,block_h=1\",\"status\":\"wrong\",\"time_ms\":0.1}\n")
  # A file with a record of knobs this build does not have (another version's) adds nothing.
  file(WRITE "${WORK}/stale.jsonl"
       "${gpu},\"knobs\":\"block_w=64,block_h=4\",\"status\":\"ok\",\"time_ms\":0.3}\n"
       "${gpu},\"knobs\":\"block_x=32\",\"status\":\"ok\",\"time_ms\":0.2}\n")
  run(2 "${TUNE}" import "${WORK}/stale.jsonl" --db "${db}")
  expect_in("${err}" "stale.jsonl:2: knobs 'block_x=32' of cassi_forward on cuda are not this build's")
  count_lines("${db}" "\"backend\":\"cuda\"" imported)
  if (NOT imported EQUAL 0)
    message(FATAL_ERROR "a refused import added ${imported} records")
  endif ()
  run(0 "${TUNE}" import "${WORK}/results.jsonl" --db "${db}")
  run(0 "${TUNE}" import "${WORK}/results.jsonl" --db "${db}")
  count_lines("${db}" "\"backend\":\"cuda\"" imported)
  if (NOT imported EQUAL 3)
    message(FATAL_ERROR "importing twice gave ${imported} cuda records, expected 3")
  endif ()

  # A record of another machine, however fast, is never mixed with this machine's.
  file(STRINGS "${db}" first LIMIT_COUNT 1)
  string(REGEX REPLACE "\"machine\":\"[^\"]*\"" "\"machine\":\"Another CPU\"" other "${first}")
  string(REGEX REPLACE "\"knobs\":\"[^\"]*\"" "\"knobs\":\"vector_factor=4,rows_per_task=32,sum_per_vector=0\"" other "${other}")
  string(REGEX REPLACE "\"time_ms\":[0-9.e+-]+" "\"time_ms\":1e-09" other "${other}")
  file(APPEND "${db}" "${other}\n")

  # Export; the configure step accepts the file and the generator builds with its knobs.
  run(0 "${TUNE}" export --db "${db}" --out "${WORK}/tuned.json")
  run(1 "${TUNE}" export --db "${db}" --out "${WORK}/no/such/dir/tuned.json")  # was "wrote", exit 0
  expect_in("${err}" "hpipe-tune: error: --out ${WORK}/no/such/dir/tuned.json: cannot write: No such file")
  # A GPU the database has no records of (a misspelt name exported the CPU's knobs alone).
  run(2 "${TUNE}" export --db "${db}" --out "${WORK}/tuned_gpu.json" --gpu "No Such GPU")
  expect_in("${err}" "hpipe-tune export: --gpu: no CUDA records of 'No Such GPU'; the database has '")
  if (EXISTS "${WORK}/tuned_gpu.json")
    message(FATAL_ERROR "export --gpu of an unknown GPU wrote a file")
  endif ()
  file(READ "${WORK}/tuned.json" tuned)
  string(FIND "${tuned}" "\"rows_per_task\": 32, \"sum_per_vector\": 0" mixed)
  if (NOT mixed EQUAL -1)
    message(FATAL_ERROR "export used another machine's record:\n${tuned}")
  endif ()
  expect_in("${tuned}" "\"cuda\": {\"block_w\": 64, \"block_h\": 4}")
  run(0 "${CMAKE_COMMAND}" -D FILE=${WORK}/tuned.json -D DEFAULTS=${SOURCE}/cmake/default_knobs.json
      -P "${SOURCE}/cmake/HpipeTuning.cmake")
  set(read_back "${out}${err}")
  string(REGEX MATCH "HPIPE_KNOBS_cassi_forward_cpu=([^\n]*)" line "${read_back}")
  if (NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no cassi_forward knobs in the tuned file:\n${read_back}")
  endif ()
  string(REPLACE "=" ":" knobs "${CMAKE_MATCH_1}")  # as hpipe_add_kernel() passes them
  run(0 "${GENERATOR}" -g cassi_forward_f32 -o "${WORK}" -e o target=host "knobs=${knobs}")
  # math_logsumexp's exported knobs: read back by the configure step and accepted by the
  # generator of both element types (the knobs tuned on float32 apply to float64 too).
  expect_in("${tuned}" "\"math_logsumexp\": { \"cpu\": {\"vector_factor\": ")  # whitespace folded
  string(REGEX MATCH "HPIPE_KNOBS_math_logsumexp_cpu=([^\n]*)" line "${read_back}")
  set(knobs "${CMAKE_MATCH_1}")
  if (NOT knobs MATCHES "^columns_per_task=[0-9]+,vector_factor=[0-9]+$")  # CMake sorts the knobs
    message(FATAL_ERROR "no math_logsumexp knobs in the tuned file:\n${read_back}")
  endif ()
  string(REPLACE "=" ":" knobs "${knobs}")
  foreach (type f32 f64)
    run(0 "${GENERATOR}" -g math_logsumexp_${type} -o "${WORK}" -e o target=host "knobs=${knobs}")
  endforeach ()
elseif (STEP STREQUAL "bundle")
  # The CUDA bundle builds, needs no Halide or CUDA library, and says so when no GPU is usable.
  run(0 "${TUNE}" bundle --out "${WORK}/cuda" --ops cassi_forward --max-variants 1 --size small --inject-wrong)
  execute_process(COMMAND "${WORK}/cuda/hpipe-tune-bundle" --out "${WORK}/cuda.jsonl" RESULT_VARIABLE rc ERROR_VARIABLE e)
  if (rc EQUAL 0)
    message(STATUS "a GPU is usable here: importing its results")
    run(0 "${TUNE}" import "${WORK}/cuda.jsonl" --db "${db}")
  else ()
    if (NOT rc EQUAL 3)
      message(FATAL_ERROR "the bundle exited ${rc} without a GPU, expected 3:\n${e}")
    endif ()
    expect_in("${e}" "no usable GPU")
  endif ()
  find_program(LDD ldd)
  if (LDD)
    run(0 "${LDD}" "${WORK}/cuda/hpipe-tune-bundle")
    if (out MATCHES "Halide|libcuda")
      message(FATAL_ERROR "the bundle links Halide or CUDA libraries:\n${out}")
    endif ()
  endif ()

  # An --out that is a file, or in a folder that does not exist, is refused before any compile (each
  # variant failed, in Halide's words).
  file(WRITE "${WORK}/afile" "")
  run(2 "${TUNE}" bundle --out "${WORK}/afile" --ops cassi_forward --max-variants 1 --size small)
  expect_in("${err}" "hpipe-tune: --out ${WORK}/afile: expected a directory (made if missing, in an existing one), got a file")
  run(2 "${TUNE}" bundle --out "${WORK}/no/such" --ops cassi_forward --max-variants 1 --size small)
  expect_in("${err}" "hpipe-tune: --out ${WORK}/no/such: expected a directory (made if missing, in an existing one), cannot make it")

  # The same driver on CPU variants runs here: verification discards the corrupted variant of every
  # op, every other variant is verified and timed, and the records import. gap_tv_step: a pipeline
  # with two outputs and float scalars.
  run(0 "${TUNE}" bundle --out "${WORK}/cpu" --ops cassi_forward,gap_tv_step --max-variants 2 --size small
      --inject-wrong --target host-user_context)
  # The driver's --min-time is a number > 0 (atof took "abc" as 0), and an --out it cannot write
  # is an error before any measurement (it aborted after all of them).
  foreach (bad abc -5 0 1e999 2x)
    run(2 "${WORK}/cpu/hpipe-tune-bundle" --out "${WORK}/unused.jsonl" --min-time ${bad})
    expect_in("${err}" "hpipe-tune-bundle: --min-time: expected a number of seconds > 0, got '${bad}'")
  endforeach ()
  run(2 "${WORK}/cpu/hpipe-tune-bundle" --out "${WORK}/no/such/results.jsonl" --min-time 0.005)
  expect_in("${err}" "hpipe-tune-bundle: --out ${WORK}/no/such/results.jsonl: cannot append to it: No such file or directory; nothing was measured")
  run(0 "${WORK}/cpu/hpipe-tune-bundle" --out "${WORK}/cpu.jsonl" --min-time 0.005)
  run(0 "${TUNE}" import "${WORK}/cpu.jsonl" --db "${db}")
  count_lines("${db}" "\"scheduler\":\"test-corrupt\";\"status\":\"wrong\";\"phase\":\"search\"" wrong)
  count_lines("${db}" "\"scheduler\":\"knobs\";\"status\":\"ok\";\"phase\":\"search\"" ok)
  if (NOT wrong EQUAL 2 OR NOT ok EQUAL 4)
    message(FATAL_ERROR "CPU bundle: ${wrong} wrong (expected 2) and ${ok} verified (expected 4) variants")
  endif ()
else ()
  message(FATAL_ERROR "STEP is defaults, tune or bundle")
endif ()
