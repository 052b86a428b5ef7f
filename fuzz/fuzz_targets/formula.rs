//! Formulas: `Formula::parse` over arbitrary text and, when it parses, its
//! evaluation over values drawn from the rest of the input, as the proptest
//! suite (`tests/fuzz.rs`) evaluates them. Input: the formula text up to the
//! first NUL byte, then the bytes the values are drawn from (none: a fixed
//! set). Property: no panic, no overflow; no credential is ever read; every
//! number given is finite; `evaluate` is the single value of `evaluate_all`.

#![no_main]

use std::cell::RefCell;

use arbitrary::{Result, Unstructured};
use eds::formula::{FieldRef, Formula, FormulaValue};
use libfuzzer_sys::fuzz_target;

fn value(u: &mut Unstructured) -> Result<FormulaValue> {
    Ok(match u.int_in_range(0..=3)? {
        0 => FormulaValue::Number(u.arbitrary()?),
        1 => FormulaValue::Number(f64::from(u.int_in_range(-100i32..=100)?)),
        2 => FormulaValue::Text(u.arbitrary()?),
        _ => FormulaValue::Boolean(u.arbitrary()?),
    })
}

/// 1 to 4 pools of 0 to 3 values each.
fn pools(bytes: &[u8]) -> Vec<Vec<FormulaValue>> {
    let mut u = Unstructured::new(bytes);
    let drawn = (|| {
        let count = u.int_in_range(1..=4)?;
        (0..count)
            .map(|_| {
                let len = u.int_in_range(0..=3)?;
                (0..len).map(|_| value(&mut u)).collect()
            })
            .collect::<Result<Vec<Vec<FormulaValue>>>>()
    })();
    match drawn {
        Ok(pools) if !bytes.is_empty() => pools,
        _ => vec![
            vec![FormulaValue::Number(2.0)],
            vec![FormulaValue::Number(3.5), FormulaValue::Number(-1.0)],
            vec![FormulaValue::Text("a".to_owned())],
            vec![],
        ],
    }
}

fuzz_target!(|data: &[u8]| {
    let (text, rest) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    let Ok(formula) = Formula::parse(&text) else {
        return;
    };
    let pools = pools(rest);
    let asked = RefCell::new(Vec::new());
    // each reference reads the pool its name's length points at, so one
    // reference always reads the same values
    let lookup = |field: &FieldRef| {
        asked.borrow_mut().push(field.clone());
        pools[format!("{field:?}").len() % pools.len()].clone()
    };
    let all = formula.evaluate_all(&lookup);
    let one = formula.evaluate(&lookup);
    assert!(
        asked.borrow().iter().all(|field| !field.reads_credentials()),
        "a credential was read"
    );
    assert!(formula.references().iter().all(|field| !field.reads_credentials()));
    for value in &all {
        if let FormulaValue::Number(number) = value {
            assert!(number.is_finite(), "a formula gave {number}");
        }
        let _ = (value.to_text(), value.to_value_json());
    }
    assert_eq!(one, if all.len() == 1 { all.first().cloned() } else { None });
});
