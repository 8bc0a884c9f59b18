//! `bench/twins.cu` holds together as C++ source: CI has no nvcc, and a merge that drops one
//! `#endif` or `}` (both sides of a conflict kept, the closing lines of one lost) is only seen
//! on the GPU machine, when nvcc refuses the file and `memlab bench` has no twins.

const TWINS: &str = include_str!("../../bench/twins.cu");

/// The source without comments and string literals (their braces and `#if`s do not count).
fn code(src: &str) -> String {
    let (mut out, mut chars) = (String::new(), src.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('/', Some('/')) => while chars.next_if(|&c| c != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            ('"', _) => while chars.next().is_some_and(|c| c != '"') {},
            _ => out.push(c),
        }
    }
    out
}

/// The nesting depth of `#if`/`#endif` after each line; `Err(line)` where it goes below 0.
fn conditional_depth(src: &str) -> Result<usize, usize> {
    let mut depth = 0usize;
    for (n, line) in src.lines().enumerate() {
        let directive = line.trim_start();
        if directive.starts_with("#if") {
            depth += 1;
        } else if directive.starts_with("#endif") {
            depth = depth.checked_sub(1).ok_or(n + 1)?;
        }
    }
    Ok(depth)
}

/// `(open - close)` of each bracket pair, and the first line where one closes more than opened.
fn bracket_balance(src: &str) -> ([i64; 3], Option<usize>) {
    let mut balance = [0i64; 3];
    let mut first_negative = None;
    for (n, line) in src.lines().enumerate() {
        for c in line.chars() {
            match c {
                '{' => balance[0] += 1,
                '}' => balance[0] -= 1,
                '(' => balance[1] += 1,
                ')' => balance[1] -= 1,
                '[' => balance[2] += 1,
                ']' => balance[2] -= 1,
                _ => {}
            }
        }
        if first_negative.is_none() && balance.iter().any(|&b| b < 0) {
            first_negative = Some(n + 1);
        }
    }
    (balance, first_negative)
}

#[test]
fn every_conditional_block_is_closed() {
    assert_eq!(conditional_depth(&code(TWINS)), Ok(0), "bench/twins.cu: #if without #endif (or the reverse)");
}

#[test]
fn every_bracket_is_closed() {
    assert_eq!(bracket_balance(&code(TWINS)), ([0, 0, 0], None), "bench/twins.cu: ({{}}, (), []) open - close");
}

#[test]
fn each_kernel_is_defined_once() {
    let src = code(TWINS);
    let mut names: Vec<&str> = src.split("KERNEL void ").skip(1).filter_map(kernel_name).collect();
    assert!(names.len() >= 20 && names.contains(&"transpose_padded"), "{names:?}");
    names.sort_unstable();
    let twice: Vec<_> = names.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
    assert!(twice.is_empty(), "defined twice in bench/twins.cu: {twice:?}");
}

/// The name after `KERNEL void `, past a `__launch_bounds__(...)` (whose arguments may nest
/// parentheses) and a macro's line continuation.
fn kernel_name(rest: &str) -> Option<&str> {
    let rest = match rest.strip_prefix("__launch_bounds__") {
        Some(bounds) => {
            let mut depth = 0;
            let end = bounds.char_indices().find_map(|(i, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                (c == ')' && depth == 0).then_some(i + 1)
            })?;
            &bounds[end..]
        }
        None => rest,
    };
    // A macro's definition continues the line with `\` before the name.
    rest.trim_start_matches(|c: char| c == '\\' || c.is_whitespace()).split('(').next().map(str::trim)
}

#[test]
fn the_checks_see_what_a_lost_line_breaks() {
    let merged = "#if A\nKERNEL void k() {\n    if (x) { y(); }\n// } in a comment\n";
    assert_eq!(conditional_depth(&code(merged)), Ok(1));
    assert_eq!(bracket_balance(&code(merged)).0, [1, 0, 0]);
    assert_eq!(conditional_depth("#endif\n#if B\n"), Err(1));
    assert_eq!(bracket_balance("}\n{").1, Some(1));
    assert_eq!(code("a \"}\" /* { */ b // (\nc"), "a   b \nc");
    assert_eq!(kernel_name("__launch_bounds__(32 * (4 / 2), 1)\n    k_8(const float* a)"), Some("k_8"));
    assert_eq!(kernel_name("plain(int n)"), Some("plain"));
    assert_eq!(kernel_name("__launch_bounds__(256, 2) \\\n    k_##BM(float* a)"), Some("k_##BM"));
}

#[test]
fn the_twins_tensor_map_array_has_the_rust_modules_name_and_slots() {
    use memlab_contracts::tma::MAP_SLOTS;
    let name = memlab::gpu::tensor_map::MAPS_SYMBOL.to_str().unwrap();
    let decl = format!("__constant__ CUtensorMap {name}[{MAP_SLOTS}];");
    assert_eq!(TWINS.matches(&decl).count(), 1, "{decl}");
    // Both TMA twins clamp their two slots to the array, as `MapIn::map` does.
    let clamp = format!("&{name}[min(map_in_slot, {}u)]", MAP_SLOTS - 1);
    assert_eq!(TWINS.matches(&clamp).count(), 2, "{clamp}");
    assert_eq!(TWINS.matches(&format!("&{name}[min(map_out_slot, {}u)]", MAP_SLOTS - 1)).count(), 2);
}
