//! Unnamed code: one `[unknown]` row per DSO by default, per address on request.

use super::*;

#[test]
fn test_hotspots_unnamed_addresses_are_one_row_per_dso_by_default() {
    let mut b = Builder::new(&["cpu-clock"]);
    // Two unnamed addresses of one DSO, one of them also a caller of the other.
    b.sample(0, 0, 10, &[0x9000, 0x9010, 0x3000]);
    b.sample(0, 0, 30, &[0x9010, 0x3000]);
    b.sample(0, 0, 5, &[0x1010, 0x3000]);
    let h = run(&b.p, "unnamed-grouped", &HotspotOptions::default());
    let unknown: Vec<Row> = h.rows().filter(|r| sym_of(r) == "[unknown]").collect();
    assert_eq!(unknown.len(), 1, "one [unknown] row for the DSO");
    assert_eq!(unknown[0].samples(0), 2);
    assert_eq!(unknown[0].period(0), 40);
    let k = unknown[0].keys().find(|k| k.key == SortKey::Sym).unwrap();
    assert!(k.is_unknown_group() && k.addr().is_none());
    // Children: the sample passing both addresses counts once for the DSO's row.
    let opts = HotspotOptions {
        children: true,
        ..HotspotOptions::default()
    };
    let h = run(&b.p, "unnamed-grouped-children", &opts);
    let u = h.rows().find(|r| sym_of(r) == "[unknown]").unwrap();
    assert_eq!(u.children_period(0), 40);
    // Per address on request.
    let opts = HotspotOptions {
        unknown_per_address: true,
        ..HotspotOptions::default()
    };
    let h = run(&b.p, "unnamed-per-address", &opts);
    assert_eq!(find(&h, "0x9000").period(0), 10);
    assert_eq!(find(&h, "0x9010").period(0), 30);
}
