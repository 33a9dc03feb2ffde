# Writes flashstep's manual page from the program's own --help texts, at build time:
#   cmake -DFLASHSTEP=path/to/flashstep -DVERSION=0.2.0 -DOUT=flashstep.1 -P packaging/manpage.cmake
# writes OUT (roff) and OUT.gz (gzip -9n, the page the package installs). The page has the
# top-level help, then one section per subcommand (and per sub-subcommand, `lesson softmax`), each
# its --help verbatim, so the page says what the program says and cannot drift from it.
cmake_minimum_required(VERSION 3.20)
foreach(var FLASHSTEP VERSION OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "manpage.cmake: -D${var}=... is required")
  endif()
endforeach()

# `flashstep <words> --help`, with the program's path shown as `flashstep`; fails the build
# when the program fails.
function(help_text words out_var)
  execute_process(COMMAND ${FLASHSTEP} ${words} --help
    OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${words}")
    message(FATAL_ERROR "manpage.cmake: `flashstep ${shown} --help` failed (${rc}): ${err}")
  endif()
  string(REPLACE "${FLASHSTEP}" "flashstep" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# The names listed under "Subcommands:" in a help text (CLI11's layout: two spaces, the name,
# spaces, the description).
function(subcommands_of text out_var)
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(in_list FALSE)
  set(names "")
  foreach(line IN LISTS lines)
    if(line STREQUAL "Subcommands:")
      set(in_list TRUE)
    elseif(in_list AND line MATCHES "^  ([a-z0-9][a-z0-9-]*)( |$)")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(in_list AND NOT line MATCHES "^ ")
      set(in_list FALSE)
    endif()
  endforeach()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

# A help text as a roff no-fill block: backslashes and minus signs escaped (an option copied
# from the page must stay --flag, not a typographic hyphen), a line that starts with . or '
# protected from being read as a request.
function(roff_block text out_var)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out_var} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

help_text("" top)
string(REGEX MATCH "^flashstep: ([^\n]*)" _ "${top}")
set(summary "${CMAKE_MATCH_1}")
if(summary STREQUAL "")
  message(FATAL_ERROR "manpage.cmake: the top-level help does not start with 'flashstep: <summary>'")
endif()
string(REPLACE "-" "\\-" summary_roff "${summary}")
string(TIMESTAMP date "%Y-%m-%d" UTC)  # SOURCE_DATE_EPOCH, when set, makes it reproducible

set(page ".TH FLASHSTEP 1 \"${date}\" \"flashstep ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\nflashstep \\- ${summary_roff}\n")
string(APPEND page ".SH SYNOPSIS\n.B flashstep\n.RI [ options ] \" \" subcommand \" \" [ subcommand\\ options ]\n.br\n.B flashstep\n")
string(APPEND page ".SH DESCRIPTION\nflashstep steps through FlashAttention (Dao et al. 2022, arXiv 2205.14135) one line of the \
paper's pseudocode at a time, with every byte that moves between a simulated HBM and SRAM counted and \
checked against the paper's closed forms. Without a subcommand and with a display, it opens the desktop \
app (the same as \\fBflashstep gui\\fR); each subcommand below has its own options, printed by \
\\fBflashstep\\fR \\fIsubcommand\\fR \\fB\\-\\-help\\fR.\n")
string(REGEX REPLACE "^flashstep: [^\n]*\n" "" top_body "${top}")
roff_block("${top_body}" block)
string(APPEND page ".SH OPTIONS\n${block}")
string(APPEND page ".SH SUBCOMMANDS\n")

# Breadth first over the subcommand tree: "lesson", then "lesson softmax".
subcommands_of("${top}" queue)
set(count 0)
while(queue)
  list(POP_FRONT queue path)           # words joined by '/': lesson/softmax
  string(REPLACE "/" ";" words "${path}")
  string(REPLACE "/" " " shown "${path}")
  help_text("${words}" text)
  roff_block("${text}" block)
  string(APPEND page ".SS \"flashstep ${shown}\"\n${block}")
  math(EXPR count "${count} + 1")
  subcommands_of("${text}" children)
  foreach(child IN LISTS children)
    list(APPEND queue "${path}/${child}")
  endforeach()
endwhile()
if(count EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: no subcommands found in `flashstep --help`")
endif()

string(APPEND page ".SH FILES\n.TP\n.I /usr/share/flashstep/\n\
The presets (assets/presets), the recorded GPU timings (assets/bench) and the heatmap shaders \
(shaders), read from here when flashstep is installed; a program run from its build tree reads its \
source tree instead.\n.TP\n.I ~/.config/flashstep/settings.json\n\
The desktop app's display settings and the course's progress (\\fB\\-\\-settings\\fR, or \\fBFLASHSTEP_SETTINGS\\fR, or \
\\fB$XDG_CONFIG_HOME\\fR/flashstep/settings.json), written only when a setting is changed.\n")
string(APPEND page ".SH SEE ALSO\nThe project's documentation (docs/ in its source tree); \
/usr/share/doc/flashstep/copyright for the licences of the libraries it is built with.\n")

file(WRITE "${OUT}" "${page}")
file(REMOVE "${OUT}.gz")
execute_process(COMMAND gzip -9n -k "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: gzip -9n ${OUT} failed")
endif()
message(STATUS "manpage.cmake: ${OUT}.gz, ${count} subcommands")
