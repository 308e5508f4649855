//! Unit tests of the print-format parser and renderer.

use super::*;

const SWITCH: &str = r#""prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio"#;

fn conv(spec: &str, v: Value) -> String {
    let pieces = parse_format_string(spec).unwrap();
    let c = pieces
        .iter()
        .find_map(|p| match p {
            Piece::Conv(c) => Some(c),
            Piece::Text(_) => None,
        })
        .unwrap();
    convert(c, &v).unwrap()
}

#[test]
fn test_sched_switch_format_parses() {
    let f = parse(SWITCH).expect("parses");
    assert_eq!(f.args.len(), 8);
}

#[test]
fn test_conversions_follow_c_printf() {
    assert_eq!(conv("%d", Value::Int(0xffff_ffff)), "-1");
    assert_eq!(conv("%u", Value::Int(-1)), "4294967295");
    assert_eq!(conv("%lu", Value::Int(-1)), "18446744073709551615");
    assert_eq!(conv("0x%08lx", Value::Int(42)), "0000002a");
    assert_eq!(conv("%03d", Value::Int(1)), "001");
    assert_eq!(conv("%-5s|", Value::Str("ab".into())), "ab   ");
    assert_eq!(conv("%#x", Value::Int(255)), "0xff");
    assert_eq!(conv("%p", Value::Int(0)), "(nil)");
    assert_eq!(conv("%hhu", Value::Int(257)), "1");
    assert!(parse_format_string("%pM").is_none());
    assert!(parse_format_string("%pS").is_some());
}

#[test]
fn test_print_flags_as_libtraceevent() {
    let flags = vec![(1, "S".to_string()), (2, "D".to_string()), (4, "T".into())];
    assert_eq!(print_flags(2, "|", flags.clone()), "D");
    assert_eq!(print_flags(3, "|", flags.clone()), "S|D");
    assert_eq!(print_flags(0x12, "|", flags.clone()), "D|0x10");
    // A 0 flag never prints; 0 with no unresolved flag prints nothing at all.
    let with_zero = vec![(0, "NONE".to_string()), (1, "S".to_string())];
    assert_eq!(print_flags(0, "|", with_zero.clone()), "");
    assert_eq!(print_flags(1, "|", with_zero), "S");
    // Unresolved names (-1): a 0 value takes the first one's name; others print in hex.
    let unresolved = vec![(-1, "I_DIRTY_SYNC".to_string()), (-1, "I_NEW".to_string())];
    assert_eq!(print_flags(0, "|", unresolved.clone()), "I_DIRTY_SYNC");
    assert_eq!(print_flags(0x10, "|", unresolved), "0x10");
}

/// The writeback format of kernel 6.12 names its flags by enum names the format leaves
/// unresolved; perf 6.1 prints a 0 state as the first name and 0x10 flags in hex.
#[test]
fn test_unresolved_flags_render_as_perf() {
    let text = r#"name: writeback_mark_inode_dirty
ID: 1007
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long state;	offset:8;	size:8;	signed:0;
	field:unsigned long flags;	offset:16;	size:8;	signed:0;

print fmt: "state=%s flags=%s", __print_flags(REC->state, "|", {I_DIRTY_SYNC, "I_DIRTY_SYNC"}, {I_NEW, "I_NEW"} ), __print_flags(REC->flags, "|", {I_DIRTY_SYNC, "I_DIRTY_SYNC"}, {I_NEW, "I_NEW"} )
"#;
    let format = super::super::parse_format("writeback", text.as_bytes(), false).unwrap();
    let mut raw = vec![0u8; 24];
    raw[16] = 0x10;
    let text = format.render(&raw, &mut |_| None).unwrap();
    assert_eq!(text, "state=I_DIRTY_SYNC flags=0x10");
}

#[test]
fn test_unresolved_flag_names_evaluate_as_libtraceevent() {
    assert_eq!(known_flag_name("RCU_SOFTIRQ"), Some(9));
    assert_eq!(known_flag_name("HRTIMER_RESTART"), Some(1));
    assert_eq!(known_flag_name("I_DIRTY_SYNC"), None);
}

#[test]
fn test_expressions_and_casts() {
    let f = parse(
        r#""%d,%d %s", ((unsigned int) ((REC->dev) >> 20)), (1U << 20) - 1, 3 > 2 ? "yes" : "no""#,
    )
    .unwrap();
    assert_eq!(f.args.len(), 3);
    // An unresolved enum name parses but does not evaluate.
    let g = parse(r#""%s", __print_symbolic(REC->x, { IOPRIO_CLASS_NONE, "none" })"#).unwrap();
    assert!(matches!(&g.args[0], Expr::Call(n, _) if n == "__print_symbolic"));
    assert!(parse("not a format").is_none());
    // Hostile nesting is refused, not a stack overflow.
    let deep = format!("\"%d\", {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(parse(&deep).is_none());
    let minus = format!("\"%d\", {}1", "-".repeat(100_000));
    assert!(parse(&minus).is_none());
    assert!(parse(r#""%d", REC->a +"#).is_none());
}
