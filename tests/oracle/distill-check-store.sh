#!/usr/bin/env bash
# aura-distill-check-store invariants v1
#
# Test oracle: an independent bash reading of STORE-FORMAT.md section 3
# ("invariants v1" of the reference checker). Used only by distilld's tests
# for differential testing; it is not shipped and not run against user stores.
#
#   distill-check-store.sh <store> [--before <orig>]
#   distill-check-store.sh --print-catalog <store>
#   distill-check-store.sh --hashes <file>
#
# Read-only: nothing is ever written under <store> or <orig>; scratch files
# live in a private mktemp -d directory that is removed on exit.
# Places where the specification leaves a choice open are marked AMBIGUOUS.

export LC_ALL=C
set -u
umask 077

SPINE_MAX_LINES=${SPINE_MAX_LINES:-80}
SPINE_MAX_BYTES=${SPINE_MAX_BYTES:-16000}
ENTRY_MAX_BYTES=${ENTRY_MAX_BYTES:-400}
FILE_MAX_LINES=${FILE_MAX_LINES:-60}
FILE_MAX_BYTES=${FILE_MAX_BYTES:-6000}

TIERS="craft ops profile projects feedback"
EVENT_RE='^- ([0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z)?)'
ARCHIVE_RE="${EVENT_RE} archive "
REBUILT_RE='rebuilt: ([0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z)?)'
CAT_PATH_RE='^- [^|]* [|]'
CAT_SEG_RE='^validated |^archived |^reason: |^from |^hook: |^pinned$|^legacy$|^oversize(: |$)|^[0-9]+ entries$'
LEDGER_KEYS="from to sha256 sha256-norm reason spine-entry"
US=$'\037'

usage() {
    {
        echo "usage: distill-check-store.sh <store> [--before <orig>]"
        echo "       distill-check-store.sh --print-catalog <store>"
        echo "       distill-check-store.sh --hashes <file>"
        [ $# -gt 0 ] && echo "error: $*"
    } >&2
    exit 2
}

# AMBIGUOUS: a cap that is not a non-negative integer is treated as a usage error (exit 2).
for _cap in SPINE_MAX_LINES SPINE_MAX_BYTES ENTRY_MAX_BYTES FILE_MAX_LINES FILE_MAX_BYTES; do
    case ${!_cap} in '' | *[!0-9]*) usage "$_cap must be a non-negative integer" ;; esac
done

# ---------------------------------------------------------------- small helpers

# rtrim: strip trailing whitespace from $REPLY in place.
rtrim() { REPLY="${REPLY%"${REPLY##*[![:space:]]}"}"; }

# trim: strip CR and leading/trailing whitespace of $1 into $REPLY.
# AMBIGUOUS: "whitespace" is the C-locale [[:space:]] class (space, tab, CR, LF, VT, FF).
trim() {
    REPLY=${1//$'\r'/}
    REPLY="${REPLY#"${REPLY%%[![:space:]]*}"}"
    rtrim
}

# Awk program printing every input line trimmed (CR removed, outer whitespace removed).
TRIM_AWK='{ gsub(/\r/, ""); sub(/^[[:space:]]+/, ""); sub(/[[:space:]]+$/, ""); print }'

sha_raw() { local h; read -r h _ < <(sha256sum < "$1"); printf '%s' "$h"; }

# sha256-norm, exactly the awk of section 1.7.
sha_norm() {
    local h
    read -r h _ < <(awk 'NR==1 && /^---\r?$/ {fm=1; print; next} fm && /^---\r?$/ {fm=0; print; next} fm && /^recall_count:/ {next} {print}' "$1" | sha256sum)
    printf '%s' "$h"
}

# field LINE KEY: split on " | " from the left; value of the first segment that
# starts with "KEY: ", trailing whitespace trimmed. Result in $REPLY; status 1 if absent.
field() {
    local rest=$1 k="$2: " seg more
    REPLY=
    while :; do
        if [[ $rest == *" | "* ]]; then
            seg=${rest%%" | "*}; rest=${rest#*" | "}; more=1
        else
            seg=$rest; more=0
        fi
        if [[ $seg == "$k"* ]]; then
            REPLY=${seg#"$k"}
            rtrim
            return 0
        fi
        [ "$more" = 1 ] || return 1
    done
}

# split_segments LINE: fills array SEGS with the " | "-separated segments.
split_segments() {
    local rest=$1
    SEGS=()
    while [[ $rest == *" | "* ]]; do
        SEGS+=("${rest%%" | "*}")
        rest=${rest#*" | "}
    done
    SEGS+=("$rest")
}

# hook_of_entry LINE -> $REPLY (trailing whitespace trimmed), the two sed expressions of 1.3.
hook_of_entry() {
    REPLY=$(printf '%s\n' "$1" | sed -E -e 's/^- \[[^]]*\]\([^)]*\)( *\+ *\[[^]]*\]\([^)]*\))*//' -e 's/^ *— *//' -e 's/^ *-- *//')
    rtrim
}

is_tier_path() {
    [[ $1 == */* ]] || return 1
    case ${1%%/*} in craft | ops | profile | projects | feedback) return 0 ;; esac
    return 1
}

# contained P KIND (section 1.10)
contained() {
    local p=$1 kind=$2 first
    [ -n "$p" ] || return 1
    case $p in '/'* | '~'* | *'\'* | *':'*) return 1 ;; esac
    case "/$p/" in *'/../'* | *'/./'* | *'//'*) return 1 ;; esac
    first=${p%%/*}
    case $kind in
        tier) is_tier_path "$p" ;;
        archived) [[ $p == archive/* ]] && is_tier_path "${p#archive/}" ;;
        spine) [ "$p" = CATALOG.md ] || is_tier_path "$p" ;;
        local) [ "$first" = local ] && [[ $p == */* ]] ;;
        store)
            if [[ ($first == archive || $first == evidence) && $p == */?* ]]; then return 0; fi
            is_tier_path "$p"
            ;;
        *) return 1 ;;
    esac
}

# is_legacy A (section 1.9)
is_legacy() {
    local rest=${1#archive/}
    [[ $rest == legacy/* ]] && return 0
    [[ $rest == */* ]] && return 1
    return 0
}

# Stamp comparison: is $1 earlier than $2?  Full timestamps only when both carry a
# time, dates otherwise.
# AMBIGUOUS: a time without seconds (THH:MMZ) is compared as THH:MM:00Z, so that
# 10:00Z vs 10:00:30Z orders by time and not by the bytes 'Z' vs ':'.
norm_stamp() {
    REPLY=$1
    [[ $REPLY =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}Z$ ]] && REPLY="${REPLY%Z}:00Z"
}
stamp_lt() {
    local a=$1 b=$2
    if [[ $a == *T* && $b == *T* ]]; then
        norm_stamp "$a"; a=$REPLY
        norm_stamp "$b"; b=$REPLY
        [[ $a < $b ]]
    else
        [[ ${a:0:10} < ${b:0:10} ]]
    fi
}

# ------------------------------------------------------------ file sets (sorted)

# all_tier_md ROOT: every *.md under the 5 tier dirs (regular files; find does not
# follow symlinks), relative to ROOT, LC_ALL=C sorted.
all_tier_md() {
    (
        cd "$1" || exit 0
        for t in $TIERS; do
            [ -d "$t" ] && find "$t" -type f -name '*.md'
        done
    ) | sort
}
tier_files() { all_tier_md "$1" | grep -v '/archive/'; }
nested_archives() { all_tier_md "$1" | grep '/archive/'; }
archive_files() {
    ( cd "$1" || exit 0; [ -d archive ] && find archive -type f -name '*.md' ) | awk -F/ '$NF != "LEDGER.md"' | sort
}
evidence_files() {
    ( cd "$1" || exit 0; [ -d evidence ] && find evidence -type f -name '*.md' ) | sort
}

# ------------------------------------------------------- per-file information

# One awk pass over a CR-stripped file: line count, frontmatter values, first
# heading, newest stamp, number of "^- " lines.
# AMBIGUOUS: an unterminated frontmatter (no closing ---) runs to the end of file.
# AMBIGUOUS: "first ^# heading" is searched over the whole file (frontmatter
#   included), like `grep -m1 '^#'`; its text is the line without leading #s and
#   without surrounding whitespace; an empty heading text falls back to (no scope).
INFO_AWK='
BEGIN { US = "\037"; nk = split("scope lifecycle read_with split_from oversize evidence_for", K, " ")
        fm = 0; stamp = ""; dash = 0; gothead = 0; head = "" }
{
    if (NR == 1 && $0 == "---") { fm = 1; next }
    if (fm == 1) {
        if ($0 == "---") fm = 2
        else for (i = 1; i <= nk; i++) {
            k = K[i]
            if (!(k in has) && index($0, k ":") == 1) {
                has[k] = 1; v = substr($0, length(k) + 2); sub(/^[ \t]+/, "", v); val[k] = v
            }
        }
    }
    if (!gothead && $0 ~ /^#/) {
        h = $0; sub(/^#+/, "", h); sub(/^[ \t]+/, "", h); sub(/[ \t]+$/, "", h); head = h; gothead = 1
    }
    if ($0 ~ /^- /) dash++
    s = $0
    while (match(s, /last_(validated|updated): *[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) {
        d = substr(s, RSTART + RLENGTH - 10, 10)
        if (stamp == "" || d > stamp) stamp = d
        s = substr(s, RSTART + RLENGTH)
    }
}
END {
    print "lines" US NR; print "stamp" US stamp; print "dash" US dash
    if (gothead) print "head" US head
    for (k in has) { print "has_" k US "1"; print "fm_" k US val[k] }
}'

declare -A I_LOADED=() I_LINES=() I_STAMP=() I_DASH=() I_HEAD=() I_BYTES=() I_FMH=() I_FMV=()

load_info() {
    local f=$1 k v
    [ -n "${I_LOADED[$f]-}" ] && return 0
    I_LOADED[$f]=1
    while IFS=$US read -r k v; do
        case $k in
            lines) I_LINES[$f]=$v ;;
            stamp) I_STAMP[$f]=$v ;;
            dash) I_DASH[$f]=$v ;;
            head) I_HEAD[$f]=$v ;;
            has_*) I_FMH["$f#${k#has_}"]=1 ;;
            fm_*) I_FMV["$f#${k#fm_}"]=$v ;;
        esac
    done < <(tr -d '\r' < "$f" | awk "$INFO_AWK")
    I_BYTES[$f]=$(wc -c < "$f")
    I_BYTES[$f]=${I_BYTES[$f]//[!0-9]/}
}
fm_has() { load_info "$1"; [ -n "${I_FMH["$1#$2"]-}" ]; }
# fm_value FILE KEY -> $REPLY (no trimming at all beyond the CR strip)
fm_value() { load_info "$1"; REPLY=${I_FMV["$1#$2"]-}; }

# scope_of FILE -> $REPLY, escaped for the catalog (\| kept, bare | -> \|)
scope_of() {
    local s
    fm_value "$1" scope
    s=$REPLY
    if [ -z "$s" ]; then s=${I_HEAD[$1]-}; fi
    [ -n "$s" ] || s="(no scope)"
    escape_bar "$s"
}
escape_bar() {
    local s=$1 out= pre
    while [[ $s == *'|'* ]]; do
        pre=${s%%'|'*}
        s=${s#*'|'}
        if [[ $pre == *'\' ]]; then out+="$pre|"; else out+="$pre\\|"; fi
    done
    REPLY=$out$s
}

# pointers_of FILE: unique pointers from "^- \[" lines (section 1.3).
pointers_of() {
    tr -d '\r' < "$1" | grep '^- \[' | grep -o '](\([^)]*\.md\))' | sed 's/^](//; s/)$//' | sort -u
}

# ------------------------------------------------------------------- ledger

# load_ledger ROOT ARRAYNAME: the CR-stripped "^- " lines of ROOT/archive/LEDGER.md.
load_ledger() {
    local -n _dst=$2
    _dst=()
    [ -f "$1/archive/LEDGER.md" ] || return 1
    mapfile -t _dst < <(tr -d '\r' < "$1/archive/LEDGER.md" | grep '^- ')
    return 0
}

# last_archive_line ARRAYNAME PATH -> $REPLY: last line matching EVENT_RE + " archive "
# that contains the substring "| to: PATH |". Status 1 when there is none.
last_archive_line() {
    local -n _arr=$1
    local p=$2 l rc=1 found=
    for l in "${_arr[@]}"; do
        [[ $l =~ $ARCHIVE_RE ]] || continue
        [[ $l == *"| to: $p |"* ]] || continue
        found=$l; rc=0
    done
    REPLY=$found
    return $rc
}

# ------------------------------------------------------------------ catalog

print_catalog() {
    local root=$1 p a e stamp line sc row from hook
    local -a T A E LEDGER_S
    # "use the current UTC time unless DISTILL_NOW is set (then use it verbatim)"
    if [ -n "${DISTILL_NOW+x}" ]; then stamp=$DISTILL_NOW; else stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ); fi
    mapfile -t T < <(tier_files "$root")
    mapfile -t A < <(archive_files "$root")
    mapfile -t E < <(evidence_files "$root")
    load_ledger "$root" LEDGER_S
    printf '# Knowledge catalog\n\n'
    printf '<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. rebuilt: %s -->\n\n' "$stamp"
    printf '## active\n'
    for p in "${T[@]}"; do
        load_info "$root/$p"
        scope_of "$root/$p"; row="- $p | $REPLY"
        [ -n "${I_STAMP[$root/$p]}" ] && row+=" | validated ${I_STAMP[$root/$p]}"
        fm_value "$root/$p" lifecycle; [ "$REPLY" = pinned ] && row+=" | pinned"
        if fm_has "$root/$p" oversize; then
            fm_value "$root/$p" oversize
            # AMBIGUOUS: an empty oversize reason prints the bare segment "| oversize"
            # (the row grammar accepts ^oversize(: |$)).
            if [ -n "$REPLY" ]; then row+=" | oversize: $REPLY"; else row+=" | oversize"; fi
        fi
        printf '%s\n' "$row"
    done
    printf '\n## archived\n'
    for a in "${A[@]}"; do
        scope_of "$root/$a"; row="- $a | $REPLY"
        if is_legacy "$a"; then
            row+=" | legacy"
        elif last_archive_line LEDGER_S "$a"; then
            line=$REPLY
            row+=" | archived ${line:2:10}"
            # AMBIGUOUS: an absent or empty reason: field omits the "| reason:" segment.
            field "$line" reason && [ -n "$REPLY" ] && row+=" | reason: $REPLY"
            field "$line" from; from=$REPLY
            field "$line" spine-entry; hook_of_entry "$REPLY"; hook=$REPLY
            row+=" | from $from | hook: $hook"
        fi
        printf '%s\n' "$row"
    done
    printf '\n## evidence\n'
    for e in "${E[@]}"; do
        load_info "$root/$e"
        fm_value "$root/$e" evidence_for
        printf '%s\n' "- $e | for $REPLY | ${I_DASH[$root/$e]} entries"
    done
}

# ------------------------------------------------------------------ reporting

REASONS=()
NOTES=()
OVERALL=0
# AMBIGUOUS: reasons are neither sorted nor de-duplicated (a duplicated catalog line
#   or ledger segment is reported once per occurrence). Notes are printed after the
#   reasons, also under a PASS.
fail() { REASONS+=("$1"); }
note() { NOTES+=("$1"); }
emit_group() {
    local g=$1 r
    if [ ${#REASONS[@]} -eq 0 ]; then
        echo "$g PASS"
    else
        echo "$g FAIL"
        OVERALL=1
        for r in "${REASONS[@]}"; do printf '    - %s\n' "$r"; done
    fi
    for r in "${NOTES[@]}"; do printf '    note: %s\n' "$r"; done
    REASONS=()
    NOTES=()
}

# ------------------------------------------------------------------ C1

check_c1() {
    local sp="$S/SPINE.md" n b len head
    if [ ! -f "$sp" ]; then
        fail "SPINE.md missing"
        return
    fi
    n=$(tr -d '\r' < "$sp" | grep -c '')
    b=$(wc -c < "$sp"); b=${b//[!0-9]/}
    [ "$n" -gt "$SPINE_MAX_LINES" ] && fail "SPINE has $n lines (max $SPINE_MAX_LINES)"
    [ "$b" -gt "$SPINE_MAX_BYTES" ] && fail "SPINE is $b bytes (max $SPINE_MAX_BYTES)"
    while IFS=$US read -r len head; do
        [ "$len" -gt "$ENTRY_MAX_BYTES" ] && fail "entry over $ENTRY_MAX_BYTES bytes ($len): $head..."
    done < <(tr -d '\r' < "$sp" | awk -v max="$ENTRY_MAX_BYTES" '
        function flush() { if (inent) print length(ent) "\037" substr(ent, 1, 60); inent = 0 }
        /^- \[/ { flush(); inent = 1; ent = $0; next }
        inent && $0 !~ /^[[:space:]]*$/ && $0 !~ /^#/ && $0 !~ /^- / && $0 !~ /^<!--/ {
            s = $0; sub(/^[[:space:]]+/, "", s); ent = ent " " s; next
        }
        { flush() }
        END { flush() }')
    tr -d '\r' < "$sp" | grep -q '^- \[[^]]*\](CATALOG.md)' || fail "SPINE has no catalog line"
}

# ------------------------------------------------------------------ C2

check_c2() {
    local p e a t n l x seg k line rel ev rest stamp prev f to from hook rowhook raw nrm r newest rebuilt cnt
    local -A PTR=() ROW=() LAST_EV=() SEEN=()
    local -a CAT=() LEDGER_S=() STAMPS=()
    local have_ledger=0 have_cat=0

    # 1. SPINE pointers
    # AMBIGUOUS: "missing" for SPINE/local/catalog paths means not a regular file
    #   (test -f, which follows symlinks); read_with/split_from/ledger-tree use test -e.
    if [ -f "$S/SPINE.md" ]; then
        while IFS= read -r p; do
            PTR[$p]=1
            if ! contained "$p" spine; then
                fail "uncontained path in SPINE.md: $p"
            elif [ ! -f "$S/$p" ]; then
                fail "SPINE pointer to missing file: $p"
            fi
        done < <(pointers_of "$S/SPINE.md")
    fi

    # 2. every tier file has a pointer (skipped with step 1 when SPINE.md is missing)
    if [ -f "$S/SPINE.md" ]; then
        for p in "${TIER[@]}"; do
            [ -n "${PTR[$p]-}" ] || fail "active file has no SPINE pointer: $p"
        done
    fi

    # 3. local/SPINE.md
    if [ -f "$S/local/SPINE.md" ]; then
        while IFS= read -r p; do
            if ! contained "$p" local; then
                fail "local/SPINE.md may point only inside local/: $p"
            elif [ ! -f "$S/$p" ]; then
                fail "local/SPINE.md pointer to missing file: $p"
            fi
        done < <(pointers_of "$S/local/SPINE.md")
    fi

    load_ledger "$S" LEDGER_S && have_ledger=1

    # 4. catalog present?
    # AMBIGUOUS: "steps 5-11 are skipped" is taken literally, so without CATALOG.md
    #   the ledger syntax checks of step 11 are skipped too (steps 12-16 still run).
    #   The verdict is FAIL either way.
    if [ ! -f "$S/CATALOG.md" ]; then
        fail "CATALOG.md missing"
    else
        have_cat=1
        mapfile -t CAT < <(tr -d '\r' < "$S/CATALOG.md")

        # catalog_row for every file of interest: first line containing "- <p> |"
        for p in "${TIER[@]}" "${ARCH[@]}" "${EVID[@]}"; do
            for l in "${CAT[@]}"; do
                if [[ $l == *"- $p |"* ]]; then ROW[$p]=$l; break; fi
            done
        done

        # 5. every file has a row
        for p in "${TIER[@]}" "${ARCH[@]}" "${EVID[@]}"; do
            [ -n "${ROW[$p]+x}" ] || fail "file not in catalog: $p"
        done

        # 6. catalog paths
        for l in "${CAT[@]}"; do
            [[ $l =~ $CAT_PATH_RE ]] || continue
            p=${l#- }; p=${p%%" |"*}
            if ! contained "$p" store; then
                fail "uncontained path in CATALOG.md: $p"
            elif [ ! -f "$S/$p" ]; then
                fail "catalog line points at missing file: $p"
            fi
        done

        # 7. row syntax
        for l in "${CAT[@]}"; do
            [[ $l == "- "* ]] || continue
            split_segments "$l"
            for ((k = 2; k < ${#SEGS[@]}; k++)); do
                seg=${SEGS[$k]}
                [[ $seg =~ $CAT_SEG_RE ]] || fail "unescaped ' | ' inside a free-text field of CATALOG.md (write it as '\\|'): $seg"
            done
        done

        # 8. active rows
        for p in "${TIER[@]}"; do
            [ -n "${ROW[$p]+x}" ] || continue
            r=${ROW[$p]}
            load_info "$S/$p"
            if [ -n "${I_STAMP[$S/$p]}" ]; then
                [[ $r == *"| validated ${I_STAMP[$S/$p]}"* ]] ||
                    fail "catalog validated date wrong for $p (newest stamp ${I_STAMP[$S/$p]})"
            else
                [[ $r == *"| validated "* ]] && fail "catalog claims a validated date for undated file $p"
            fi
            # AMBIGUOUS: "lifecycle: pinned" means fm_value(lifecycle) is exactly "pinned".
            fm_value "$S/$p" lifecycle
            if [ "$REPLY" = pinned ]; then
                [[ $r == *"| pinned"* ]] || fail "catalog row lacks pinned for $p"
            else
                [[ $r == *"| pinned"* ]] && fail "catalog row says pinned but $p is not"
            fi
        done

        # 9. evidence rows
        # AMBIGUOUS: the entry-count check needs a row and is skipped when the row is
        #   missing (already reported by step 5); the evidence_for checks always run.
        #   After "disagrees", the existence check is not made (t is not the twin's pair).
        for e in "${EVID[@]}"; do
            load_info "$S/$e"
            cnt=${I_DASH[$S/$e]}
            if [ -n "${ROW[$e]+x}" ]; then
                [[ ${ROW[$e]} == *"| $cnt entries"* ]] || fail "catalog count wrong for $e (file has $cnt entries)"
            fi
            fm_value "$S/$e" evidence_for; t=$REPLY
            if [ -z "$t" ]; then
                fail "$e has no evidence_for"
                continue
            fi
            if [ "$t" != "${e#evidence/}" ]; then
                fail "evidence_for disagrees with the twin's path: $e says $t"
                continue
            fi
            if [ ! -e "$S/$t" ] && [ ! -e "$S/archive/$t" ]; then
                if [ -e "$S/archive/legacy/archive/$t" ]; then
                    note "evidence twin of an adopted legacy archive: $e (archive/legacy/archive/$t)"
                else
                    fail "orphan evidence: $e (evidence_for $t is neither active nor archived)"
                fi
            fi
        done

        # 10. archived rows
        # AMBIGUOUS: row-content checks (legacy label, from, hook) run only when the
        #   archive file has a row; the ledger checks run regardless.
        for a in "${ARCH[@]}"; do
            r=${ROW[$a]-}
            if is_legacy "$a"; then
                if [ -n "${ROW[$a]+x}" ]; then
                    [[ $r == *"| legacy"* ]] || fail "flat archive file must be labelled legacy in the catalog: $a"
                fi
                continue
            fi
            if [ -n "${ROW[$a]+x}" ]; then
                [[ $r == *"| legacy"* ]] && fail "nested archive file labelled legacy: $a"
                [[ $r == *"| from "* ]] || fail "archived row lacks 'from': $a"
                [[ $r == *"| hook: "* ]] || fail "archived row lacks 'hook': $a"
            fi
            if [ "$have_ledger" != 1 ]; then
                fail "archive/LEDGER.md missing but $a is not legacy"
                continue
            fi
            if ! last_archive_line LEDGER_S "$a"; then
                fail "no ledger archive event for: $a (unledgered: pending adoption by migrate-store)"
                continue
            fi
            line=$REPLY
            raw=$(sha_raw "$S/$a")
            field "$line" sha256
            if [ "$raw" != "$REPLY" ]; then
                if field "$line" sha256-norm && [ "$REPLY" = "$(sha_norm "$S/$a")" ]; then
                    note "recall_count drift only (tolerated): $a"
                else
                    fail "ledger sha256 does not match archived file: $a"
                fi
            fi
            if [ -n "${ROW[$a]+x}" ]; then
                field "$line" spine-entry; hook_of_entry "$REPLY"; hook=$REPLY
                field "$r" hook; rowhook=$REPLY
                [ "$hook" = "$rowhook" ] || fail "catalog hook differs from ledger spine-entry hook: $a"
            fi
        done

        # 11. ledger syntax
        if [ "$have_ledger" = 1 ]; then
            prev=
            for line in "${LEDGER_S[@]}"; do
                if ! [[ $line =~ $EVENT_RE ]]; then
                    fail "malformed ledger line (no leading date): ${line:0:70}"
                    continue
                fi
                stamp=${BASH_REMATCH[1]}
                # AMBIGUOUS: "the previous line" is the previous line that has a valid
                #   stamp (malformed lines are skipped for ordering).
                if [ -n "$prev" ] && stamp_lt "$stamp" "$prev"; then
                    fail "ledger events out of order: $stamp appended after $prev (append order must be date order)"
                fi
                prev=$stamp
                # AMBIGUOUS: the event is the text after "- STAMP" up to the first " |"
                #   (whole rest of line if none), minus exactly one leading space.
                rest=${line:$((2 + ${#stamp}))}
                ev=${rest%%" |"*}
                ev=${ev# }
                # AMBIGUOUS: the "…" of this message is the first 70 bytes of the line.
                case $ev in
                    archive | restore | "restore (modified)") ;;
                    *) fail "unknown ledger event '$ev': ${line:0:70}" ;;
                esac
                split_segments "$line"
                SEEN=()
                for ((k = 1; k < ${#SEGS[@]}; k++)); do
                    seg=${SEGS[$k]}
                    x=
                    for n in $LEDGER_KEYS; do
                        if [[ $seg == "$n: "* ]]; then x=$n; break; fi
                    done
                    if [ -z "$x" ] || [ -n "${SEEN[$x]-}" ]; then
                        fail "unescaped ' | ' inside a free-text field of archive/LEDGER.md (write it as '\\|'): $seg"
                    fi
                    [ -n "$x" ] && SEEN[$x]=1
                done
                # AMBIGUOUS: an absent from:/to: field counts as the empty path and is
                #   reported as uncontained.
                field "$line" from; from=$REPLY
                field "$line" to; to=$REPLY
                contained "$from" store || fail "uncontained path in archive/LEDGER.md from: $from"
                contained "$to" store || fail "uncontained path in archive/LEDGER.md to: $to"
                case $ev in
                    archive)
                        if ! { contained "$from" tier && [ "$to" = "archive/$from" ]; }; then
                            fail "ledger archive line must move X to archive/X: from $from to $to"
                        fi
                        ;;
                    restore | "restore (modified)")
                        if ! { contained "$to" tier && [ "$from" = "archive/$to" ]; }; then
                            fail "ledger restore line must move archive/X to X: from $from to $to"
                        fi
                        ;;
                esac
            done
        fi
    fi

    # 12. ledger/tree agreement (last event per tier-contained path, file order)
    if [ "$have_ledger" = 1 ]; then
        for line in "${LEDGER_S[@]}"; do
            [[ $line =~ $EVENT_RE ]] || continue
            stamp=${BASH_REMATCH[1]}
            STAMPS+=("$stamp")
            rest=${line:$((2 + ${#stamp}))}
            ev=${rest%%" |"*}; ev=${ev# }
            field "$line" to; to=$REPLY
            case $ev in
                archive) x=${to#archive/}; contained "$x" tier && LAST_EV[$x]=archive ;;
                restore | "restore (modified)") x=$to; contained "$x" tier && LAST_EV[$x]=restore ;;
            esac
        done
        while IFS= read -r x; do
            [ -n "$x" ] || continue
            if [ "${LAST_EV[$x]}" = archive ]; then
                if ! { [ -e "$S/archive/$x" ] && [ ! -e "$S/$x" ]; }; then
                    fail "ledger says archived but tree disagrees: $x"
                fi
            else
                if ! { [ -e "$S/$x" ] && [ ! -e "$S/archive/$x" ]; }; then
                    fail "ledger says restored but tree disagrees: $x"
                fi
            fi
        done < <(printf '%s\n' "${!LAST_EV[@]}" | sort)
    fi

    # 13. catalog freshness
    # AMBIGUOUS: with no dated ledger line at all there is no "newest" and no
    #   staleness check; a missing rebuilt: stamp is still reported.
    if [ "$have_ledger" = 1 ] && [ "$have_cat" = 1 ]; then
        rebuilt=
        for l in "${CAT[@]}"; do
            if [[ $l =~ $REBUILT_RE ]]; then rebuilt=${BASH_REMATCH[1]}; break; fi
        done
        if [ -z "$rebuilt" ]; then
            fail "catalog has no rebuilt: stamp"
        elif [ ${#STAMPS[@]} -gt 0 ]; then
            newest=$(printf '%s\n' "${STAMPS[@]}" | sort | tail -1)
            stamp_lt "$rebuilt" "$newest" && fail "catalog stale: rebuilt $rebuilt but newest ledger event is $newest"
        fi
    fi

    # 14. collisions
    for p in "${TIER[@]}"; do
        [ -e "$S/archive/$p" ] && fail "path exists both active and archived: $p"
    done

    # 15. nested archives
    for n in "${NESTED[@]}"; do
        fail "legacy archive inside a tier directory: $n (migration adopts it to archive/legacy/$n)"
    done

    # 16. symlinks
    local -a roots=()
    for x in $TIERS archive evidence local SPINE.md CATALOG.md; do
        if [ -e "$S/$x" ] || [ -L "$S/$x" ]; then roots+=("$x"); fi
    done
    if [ ${#roots[@]} -gt 0 ]; then
        while IFS= read -r rel; do
            fail "symlink in store: $rel"
        done < <(cd "$S" && find "${roots[@]}" -type l | sort)
    fi
}

# ------------------------------------------------------------------ C3

check_c3() {
    local p f v inner item sf
    local -a items
    for p in "${TIER[@]}"; do
        f="$S/$p"
        load_info "$f"
        [ "${I_LINES[$f]}" -gt "$FILE_MAX_LINES" ] && fail "$p has ${I_LINES[$f]} lines (max $FILE_MAX_LINES)"
        # AMBIGUOUS: "has oversize:" means a frontmatter line "oversize:" exists, even
        #   with an empty reason.
        if ! fm_has "$f" oversize && [ "${I_BYTES[$f]}" -gt "$FILE_MAX_BYTES" ]; then
            fail "$p is ${I_BYTES[$f]} bytes (max $FILE_MAX_BYTES; declare oversize: <reason> to exempt)"
        fi
        if fm_has "$f" read_with; then
            fm_value "$f" read_with; v=$REPLY
            # fm_value does no trailing trim, so "[a.md] " is not an inline list.
            if [[ $v != \[*\] ]]; then
                fail "$p read_with must be an inline list [a.md, b.md]"
            else
                inner=${v#\[}; inner=${inner%\]}
                IFS=, read -r -a items <<< "$inner"
                for item in "${items[@]}"; do
                    trim "$item"; item=$REPLY
                    [ -n "$item" ] || continue
                    if [[ $item == local/* ]]; then
                        fail "$p read_with into local/ overlay: $item"
                    elif ! contained "$item" store; then
                        fail "uncontained path in $p read_with: $item"
                    elif [ ! -e "$S/$item" ]; then
                        fail "$p read_with target missing: $item"
                    fi
                done
            fi
        fi
        # AMBIGUOUS: split_from is "present" when its frontmatter value is non-empty.
        fm_value "$f" split_from; sf=$REPLY
        if [ -n "$sf" ]; then
            if ! contained "$sf" tier; then
                fail "uncontained path in $p split_from: $sf"
            elif [ ! -e "$S/$sf" ]; then
                fail "$p split_from target missing: $sf"
            fi
        fi
    done
}

# ------------------------------------------------------------------ C4

# same_file X Y NOTEPATH: identical raw bytes, or identical apart from the
# frontmatter recall_count line (then a drift note is added).
same_file() {
    [ -f "$1" ] && [ -f "$2" ] || return 1
    [ "$(sha_raw "$1")" = "$(sha_raw "$2")" ] && return 0
    if [ "$(sha_norm "$1")" = "$(sha_norm "$2")" ]; then
        note "recall_count drift only (tolerated): $3"
        return 0
    fi
    return 1
}

# Multiset conservation in one awk pass. The plan file (argument 1) holds records
# LABEL<US>ROLE<US>PATH, grouped by label; ROLE is
#   B  a before file, every line counts;
#   BF a before file whose frontmatter block is dropped first;
#   C  a candidate file.
# Every line is CR-stripped and trimmed; blank before lines are dropped. For each
# label, each distinct before line with count k must occur >= k times among the
# candidates (the equivalent of counting with grep -Fxc). Output records:
# LABELINDEX<US>LINE<US>k<US>have<US>first 70 bytes, to be sorted.
MULTI_AWK='
function readfile(path, role,    line, n, fm) {
    n = 0; fm = 0
    while ((getline line < path) > 0) {
        n++
        gsub(/\r/, "", line)
        if (role == "BF") {
            if (n == 1 && line == "---") { fm = 1; continue }
            if (fm == 1) { if (line == "---") fm = 2; continue }
        }
        sub(/^[[:space:]]+/, "", line); sub(/[[:space:]]+$/, "", line)
        if (role == "C") cand[line]++
        else if (line != "") { if (!(line in bef)) order[++nb] = line; bef[line]++ }
    }
    close(path)
}
function flush(    i, l, have) {
    for (i = 1; i <= nb; i++) {
        l = order[i]; have = (l in cand) ? cand[l] : 0
        if (have < bef[l]) printf "%08d\037%s\037%d\037%d\037%s\n", idx, l, bef[l], have, substr(l, 1, 70)
    }
    split("", cand); split("", bef); split("", order); nb = 0
}
BEGIN { FS = "\037"; idx = 0; cur = "" }
{
    if ($1 != cur) { if (cur != "") flush(); cur = $1; idx++; label[idx] = $1 }
    readfile($3, $2)
}
END { if (cur != "") flush() }'

# run_multi PLANFILE: report the lost lines of every label of the plan.
run_multi() {
    local -a labels=()
    local i l k have text
    mapfile -t labels < <(awk -F"$US" '$1 != c { print $1; c = $1 }' "$1")
    while IFS=$US read -r i l k have text; do
        i=$((10#$i))
        fail "line lost from ${labels[$((i - 1))]} (before x$k, after x$have): $text"
    done < <(awk "$MULTI_AWK" "$1" | sort)
}

# Protected/marker selection (C4.9). Argument 1: the pool file list (one path a
# line); argument 2: records LABEL<US>PATH of before-tier files. Prints
# LABEL<US>LINE for every selected, trimmed, non-blank line absent from the pool.
PROT_AWK='
function trimmed(l) { gsub(/\r/, "", l); sub(/^[[:space:]]+/, "", l); sub(/[[:space:]]+$/, "", l); return l }
function check(l) { l = trimmed(l); if (l != "" && !(l in pool)) print label "\037" l }
BEGIN { M = "\\[(NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^]]*\\]" }
FILENAME == ARGV[1] {
    while ((getline l < $0) > 0) pool[trimmed(l)] = 1
    close($0)
    next
}
{
    split($0, a, "\037"); label = a[1]; path = substr($0, length(label) + 2)
    insec = 0; slvl = 0; blk = 0
    while ((getline l < path) > 0) {
        gsub(/\r/, "", l)
        if (l ~ /^#+ /) {
            lvl = 0; while (substr(l, lvl + 1, 1) == "#") lvl++
            if (insec && lvl <= slvl) insec = 0
            if (l ~ M) { insec = 1; slvl = lvl; check(l); continue }
        }
        if (insec) { check(l); continue }
        if (l ~ /^- / && l ~ M) { blk = 1; check(l); continue }
        if (blk && l ~ /^[ \t]+[^ \t]/) { check(l); continue }
        blk = 0
        if (l ~ M) check(l)
    }
    close(path)
}'

check_c4() {
    local p e a n c f sf par parent raw nrm line x k have needle
    local -a BT=() BA=() BE=() BN=() LEDGER_B=() LEDGER_S=() CH=()
    local have_bl=0
    mapfile -t BT < <(tier_files "$B")
    mapfile -t BA < <(archive_files "$B")
    mapfile -t BE < <(evidence_files "$B")
    mapfile -t BN < <(nested_archives "$B")
    load_ledger "$B" LEDGER_B && have_bl=1
    load_ledger "$S" LEDGER_S
    local W="$TMPD/c4"
    mkdir -p "$W"

    # split children by parent (after store, active and archived)
    local -A KIDS=()
    for c in "${TIER[@]}" "${ARCH[@]}"; do
        fm_value "$S/$c" split_from
        [ -n "$REPLY" ] && KIDS[$REPLY]+="$c"$'\n'
    done

    # 1. multiset conservation
    : > "$W/plan"
    for p in "${BT[@]}"; do
        {
            printf '%s\037B\037%s\n' "$p" "$B/$p"
            [ -f "$B/evidence/$p" ] && printf '%s\037BF\037%s\n' "$p" "$B/evidence/$p"
            for f in "$S/$p" "$S/evidence/$p" "$S/archive/$p"; do
                [ -f "$f" ] && printf '%s\037C\037%s\n' "$p" "$f"
            done
            if [ -n "${KIDS[$p]-}" ]; then
                while IFS= read -r c; do
                    [ -n "$c" ] || continue
                    printf '%s\037C\037%s\n' "$p" "$S/$c"
                    f="$S/evidence/${c#archive/}"
                    [ -f "$f" ] && printf '%s\037C\037%s\n' "$p" "$f"
                done <<< "${KIDS[$p]}"
            fi
        } >> "$W/plan"
    done
    run_multi "$W/plan"

    # 2. pinned files stay  /  3. NON-NEGOTIABLE never archived
    local -A PINNED=() NONNEG=()
    if [ ${#BT[@]} -gt 0 ]; then
        while IFS= read -r f; do PINNED[${f#"$B"/}]=1; done < <(cd "$B" && grep -l -e '^lifecycle: pinned' -- "${BT[@]}")
        while IFS= read -r f; do NONNEG[${f#"$B"/}]=1; done < <(cd "$B" && grep -l -e '\[NON-NEGOTIABLE[^]]*\]' -- "${BT[@]}")
    fi
    for p in "${BT[@]}"; do
        if [ -n "${PINNED[$p]-}" ] && [ ! -e "$S/$p" ]; then
            fail "pinned file was moved: $p"
        fi
        if [ -n "${NONNEG[$p]-}" ] && [ -e "$S/archive/$p" ]; then
            fail "file carrying [NON-NEGOTIABLE] was archived: $p"
        fi
    done

    # 4. evidence twins are append-only (multiplicity kept within the same twin)
    # AMBIGUOUS: all trimmed non-blank lines count, frontmatter included; the "…" of
    #   the message is the first 70 bytes of the line, as in step 1.
    : > "$W/plan"
    for e in "${BE[@]}"; do
        if [ ! -f "$S/$e" ]; then
            fail "evidence twin deleted: $e"
            continue
        fi
        printf '%s\037B\037%s\n%s\037C\037%s\n' "$e" "$B/$e" "$e" "$S/$e" >> "$W/plan"
    done
    run_multi "$W/plan"

    # 5. unledgered before archives must be adopted
    # AMBIGUOUS: the drift note names the after path (archive/legacy/<a>).
    for a in "${BA[@]}"; do
        is_legacy "$a" && continue
        if [ "$have_bl" = 1 ] && last_archive_line LEDGER_B "$a"; then continue; fi
        if [ ! -e "$S/archive/legacy/$a" ]; then
            fail "unledgered archive not adopted: $a (expected archive/legacy/$a)"
        elif ! same_file "$B/$a" "$S/archive/legacy/$a" "archive/legacy/$a"; then
            fail "legacy archive file changed: archive/legacy/$a"
        fi
    done

    # 6. no archive file disappears
    for a in "${BA[@]}"; do
        [ -e "$S/$a" ] || [ -e "$S/archive/legacy/$a" ] || fail "archive file deleted: $a"
    done

    # 7. nested archives adopted
    for n in "${BN[@]}"; do
        if [ ! -e "$S/archive/legacy/$n" ]; then
            fail "nested legacy archive not adopted: $n (expected archive/legacy/$n)"
        elif ! same_file "$B/$n" "$S/archive/legacy/$n" "archive/legacy/$n"; then
            fail "legacy archive file changed: archive/legacy/$n"
        fi
    done

    # 8. every after archive file has an original
    for a in "${ARCH[@]}"; do
        if is_legacy "$a"; then
            if [ -e "$B/$a" ]; then
                same_file "$S/$a" "$B/$a" "$a" || fail "legacy archive file changed: $a"
            elif [[ $a == archive/legacy/* ]] && [ -e "$B/${a#archive/legacy/}" ]; then
                :
            else
                fail "archived file has no original: $a"
            fi
            continue
        fi
        same_file "$S/$a" "$B/$a" "$a" && continue
        same_file "$S/$a" "$B/${a#archive/}" "$a" && continue
        fm_value "$S/$a" split_from; par=$REPLY
        parent=0
        if [ -n "$par" ] && contained "$par" tier && { [ -e "$B/$par" ] || [ -e "$B/archive/$par" ]; }; then
            parent=1
        fi
        if [ ! -e "$B/$a" ] && [ ! -e "$B/${a#archive/}" ] && [ "$parent" = 0 ]; then
            fail "archived file has no original: $a"
            continue
        fi
        x=1
        if last_archive_line LEDGER_S "$a"; then
            line=$REPLY
            raw=$(sha_raw "$S/$a")
            if field "$line" sha256 && [ "$REPLY" = "$raw" ]; then
                x=0
            elif field "$line" sha256-norm && [ "$REPLY" = "$(sha_norm "$S/$a")" ]; then
                x=0
            fi
        fi
        [ "$x" = 0 ] || fail "archived file differs from original and from its ledger checksum: $a"
    done

    # 9. protected and marker lines stay in active/archive
    : > "$W/pool"
    for f in "${TIER[@]}" "${ARCH[@]}"; do
        printf '%s\n' "$S/$f" >> "$W/pool"
    done
    : > "$W/prot"
    for p in "${BT[@]}"; do
        printf '%s\037%s\n' "$p" "$B/$p" >> "$W/prot"
    done
    while IFS=$US read -r p line; do
        fail "protected block line not in active/archive ($p): ${line:0:70}"
    done < <(awk "$PROT_AWK" "$W/pool" "$W/prot")

    # 10. SPINE hooks survive somewhere in scope
    if [ -f "$B/SPINE.md" ]; then
        local -a scopefiles=()
        [ -f "$S/SPINE.md" ] && scopefiles+=("$S/SPINE.md")
        for f in "${TIER[@]}" "${ARCH[@]}"; do scopefiles+=("$S/$f"); done
        {
            [ -f "$S/CATALOG.md" ] && sed 's/\\|/|/g' "$S/CATALOG.md" && echo
            [ ${#scopefiles[@]} -gt 0 ] && awk '{ print }' "${scopefiles[@]}"
        } > "$W/scope"
        # Needles, in SPINE order: hook_of_entry of each entry's first line, and each
        # continuation line (left-trimmed as in the entry grammar); trailing-trimmed.
        tr -d '\r' < "$B/SPINE.md" | awk '
            /^- \[/ { inent = 1; print "F\037" $0; next }
            inent && $0 !~ /^[[:space:]]*$/ && $0 !~ /^#/ && $0 !~ /^- / && $0 !~ /^<!--/ {
                s = $0; sub(/^[[:space:]]+/, "", s); print "C\037" s; next
            }
            { inent = 0 }' |
            sed -E -e 's/^(F\x1f)- \[[^]]*\]\([^)]*\)( *\+ *\[[^]]*\]\([^)]*\))*/\1/' -e 's/^(F\x1f) *— */\1/' -e 's/^(F\x1f) *-- */\1/' |
            sed -E -e 's/^[FC]\x1f//' -e 's/[[:space:]]+$//' | awk 'NF' > "$W/needles"
        while IFS= read -r needle; do
            fail "SPINE hook lost: ${needle:0:70}"
        done < <(awk 'FILENAME == ARGV[1] { nd[++n] = $0; next }
                      { for (i = 1; i <= n; i++) if (!(i in found) && index($0, nd[i]) > 0) found[i] = 1 }
                      END { for (i = 1; i <= n; i++) if (!(i in found)) print nd[i] }' "$W/needles" "$W/scope")
    fi
}

# ------------------------------------------------------------------ main

MODE=check
STORE=
BEFORE=
case ${1-} in
    --print-catalog)
        [ $# -eq 2 ] || usage
        MODE=catalog; STORE=$2
        ;;
    --hashes)
        [ $# -eq 2 ] || usage
        # AMBIGUOUS: a --hashes argument that is not a readable regular file is a usage error.
        [ -f "$2" ] && [ -r "$2" ] || usage "not a readable file: $2"
        printf 'sha256 %s\n' "$(sha_raw "$2")"
        printf 'sha256-norm %s\n' "$(sha_norm "$2")"
        exit 0
        ;;
    '' | -*) usage ;;
    *)
        STORE=$1; shift
        while [ $# -gt 0 ]; do
            case $1 in
                --before)
                    [ $# -ge 2 ] && [ -z "$BEFORE" ] || usage
                    BEFORE=$2; shift 2
                    [ -n "$BEFORE" ] || usage "--before needs a directory"
                    ;;
                *) usage "unexpected argument: $1" ;;
            esac
        done
        ;;
esac

# AMBIGUOUS: a store (or --before) argument that is not an existing directory is a usage error (exit 2).
[ -d "$STORE" ] || usage "not a directory: $STORE"
S=$(cd "$STORE" && pwd -P) || usage "cannot enter $STORE"

if [ "$MODE" = catalog ]; then
    print_catalog "$S"
    exit 0
fi

B=
if [ -n "$BEFORE" ]; then
    [ -d "$BEFORE" ] || usage "not a directory: $BEFORE"
    B=$(cd "$BEFORE" && pwd -P) || usage "cannot enter $BEFORE"
fi

TMPD=$(mktemp -d) || { echo "error: mktemp failed" >&2; exit 2; }
trap 'rm -rf "$TMPD"' EXIT
trap 'exit 130' INT TERM HUP

mapfile -t TIER < <(tier_files "$S")
mapfile -t NESTED < <(nested_archives "$S")
mapfile -t ARCH < <(archive_files "$S")
mapfile -t EVID < <(evidence_files "$S")

check_c1; emit_group C1
check_c2; emit_group C2
check_c3; emit_group C3
if [ -n "$B" ]; then
    check_c4; emit_group C4
fi
exit "$OVERALL"
