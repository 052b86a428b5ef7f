//! Formula text to tokens: quoted literals, numbers, booleans, operator
//! keywords and field references (`docs/guide/src/concepts/formulas.md`, "Grammar").

use super::operators::Operator;
use super::{FieldRef, Formula, FormulaError, FormulaValue, Token};
use crate::model::value::is_valid_property_name;

impl FieldRef {
    fn parse(token: &str) -> Result<FieldRef, FormulaError> {
        let invalid = || FormulaError::InvalidToken(token.to_owned());
        let name = |part: &str| {
            if is_valid_property_name(part) {
                Ok(part.to_owned())
            } else {
                Err(invalid())
            }
        };
        let parts: Vec<&str> = token.split('.').collect();
        match parts.as_slice() {
            ["_id"] => Ok(FieldRef::Id),
            ["_child" | "_referrer"] => Err(invalid()),
            [prop] => Ok(FieldRef::Own(name(prop)?)),
            [head, entity_type, prop] => {
                let entity_type = match *entity_type {
                    "*" => None,
                    named => Some(name(named)?),
                };
                let prop = name(prop)?;
                Ok(match *head {
                    "_child" => FieldRef::Child { entity_type, prop },
                    "_referrer" => FieldRef::Referrer { entity_type, prop },
                    via => FieldRef::Reference {
                        via: name(via)?,
                        entity_type,
                        prop,
                    },
                })
            }
            _ => Err(invalid()),
        }
    }
}

impl Formula {
    /// Parses a formula; a formula not ending in an operator gets `CONCAT` appended.
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        let mut tokens = Vec::new();
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let (start, c) = chars[i];
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            if c == '"' || c == '\'' {
                let mut literal = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(FormulaError::UnterminatedLiteral(start)),
                        Some(&(_, '\\')) if chars.get(i + 1).map(|&(_, n)| n) == Some(c) => {
                            literal.push(c);
                            i += 2;
                        }
                        Some(&(end, q)) if q == c => {
                            i += 1;
                            if chars.get(i).is_some_and(|&(_, n)| !n.is_whitespace()) {
                                return Err(FormulaError::TextAfterLiteral(end));
                            }
                            break;
                        }
                        Some(&(_, other)) => {
                            literal.push(other);
                            i += 1;
                        }
                    }
                }
                tokens.push(Token::Literal(FormulaValue::Text(literal)));
                continue;
            }
            let end = chars[i..]
                .iter()
                .find(|(_, n)| n.is_whitespace())
                .map_or(text.len(), |&(at, _)| at);
            let word = &text[start..end];
            i += word.chars().count();
            tokens.push(Formula::word(word)?);
        }
        match tokens.last() {
            None => return Err(FormulaError::Empty),
            Some(Token::Operator(_)) => {}
            Some(_) => tokens.push(Token::Operator(Operator::Concat)),
        }
        Ok(Formula { tokens })
    }

    fn word(word: &str) -> Result<Token, FormulaError> {
        if let Some(op) = Operator::parse(word) {
            return Ok(Token::Operator(op));
        }
        match word {
            "true" => return Ok(Token::Literal(FormulaValue::Boolean(true))),
            "false" => return Ok(Token::Literal(FormulaValue::Boolean(false))),
            _ => {}
        }
        if is_number_literal(word) {
            return match word.parse::<f64>() {
                Ok(number) if number.is_finite() => Ok(Token::Literal(FormulaValue::Number(number))),
                _ => Err(FormulaError::InvalidToken(word.to_owned())),
            };
        }
        FieldRef::parse(word).map(Token::Field)
    }
}

/// `-?digits(.digits)?`: the only spelling of a numeric literal.
fn is_number_literal(word: &str) -> bool {
    let unsigned = word.strip_prefix('-').unwrap_or(word);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::operators::Arity;
    use crate::formula::test_support::*;
    use FormulaValue::{Boolean, Number};

    #[test]
    fn tokens_are_split_on_any_whitespace() {
        let fields = [("first", texts(&["John"])), ("last", texts(&["Doe"]))];
        assert_eq!(
            eval_with("first\t\" \"\n last   CONCAT", &fields),
            Some(text("John Doe"))
        );
    }

    #[test]
    fn quoted_literals_keep_their_spaces() {
        assert_eq!(eval("\"a  b\" ' c d '"), Some(text("a  b c d ")));
    }

    #[test]
    fn single_quoted_literal_may_hold_double_quotes_and_the_reverse() {
        assert_eq!(eval(r#"'say "hi"' " it's""#), Some(text(r#"say "hi" it's"#)));
    }

    #[test]
    fn backslash_escapes_the_closing_quote_only() {
        assert_eq!(eval(r#""a \"b\" c\d""#), Some(text(r#"a "b" c\d"#)));
    }

    #[test]
    fn empty_literal_is_an_empty_string() {
        assert_eq!(eval("''"), Some(text("")));
    }

    #[test]
    fn unterminated_literal_is_a_parse_error() {
        assert_eq!(Formula::parse("name ' x"), Err(FormulaError::UnterminatedLiteral(5)));
    }

    #[test]
    fn text_glued_to_a_literal_is_a_parse_error() {
        assert!(matches!(Formula::parse("'a'b"), Err(FormulaError::TextAfterLiteral(_))));
        assert!(matches!(Formula::parse("a'b'"), Err(FormulaError::InvalidToken(_))));
    }

    #[test]
    fn empty_formula_is_a_parse_error() {
        assert_eq!(Formula::parse(""), Err(FormulaError::Empty));
        assert_eq!(Formula::parse(" \n\t "), Err(FormulaError::Empty));
    }

    #[test]
    fn malformed_reference_is_a_parse_error() {
        for bad in [
            "a.b",
            "a.b.c.d",
            "_child",
            "_referrer",
            "a..b",
            "a.*.",
            ".*.b",
            "pri$e",
            "a.b*.c",
        ] {
            assert!(
                matches!(Formula::parse(bad), Err(FormulaError::InvalidToken(_))),
                "{bad} should not parse"
            );
        }
    }

    #[test]
    fn every_reference_form_parses() {
        let formula =
            Formula::parse("name _id _child.*.price _referrer.invoice.total customer.person.name _parent.*._id")
                .unwrap();
        assert_eq!(
            formula.references(),
            vec![
                FieldRef::Own("name".into()),
                FieldRef::Id,
                FieldRef::Child {
                    entity_type: None,
                    prop: "price".into()
                },
                FieldRef::Referrer {
                    entity_type: Some("invoice".into()),
                    prop: "total".into()
                },
                FieldRef::Reference {
                    via: "customer".into(),
                    entity_type: Some("person".into()),
                    prop: "name".into()
                },
                FieldRef::Reference {
                    via: "_parent".into(),
                    entity_type: None,
                    prop: "_id".into()
                },
            ]
        );
    }

    #[test]
    fn references_are_listed_once_in_order_of_first_use() {
        let formula = Formula::parse("b a b 'a' 1 a").unwrap();
        assert_eq!(
            formula.references(),
            vec![FieldRef::Own("b".into()), FieldRef::Own("a".into())]
        );
    }

    #[test]
    fn numeric_literals_are_plain_decimals() {
        assert_eq!(eval("-2 45.67 1.50 SUM"), Some(Number(45.17)));
        // Other spellings are property names, or not valid at all.
        assert_eq!(
            Formula::parse("1e3").unwrap().references(),
            vec![FieldRef::Own("1e3".into())]
        );
        assert!(Formula::parse(".5").is_err());
    }

    #[test]
    fn boolean_literals_push_booleans() {
        assert_eq!(eval("true false NE"), Some(Boolean(true)));
    }

    #[test]
    fn operator_keywords_are_case_sensitive() {
        let fields = [("concat", texts(&["field"]))];
        assert_eq!(eval_with("'a' concat", &fields), Some(text("afield")));
        assert_eq!(Operator::parse("SUM"), Some(Operator::Sum));
        assert_eq!(Operator::Sum.keyword(), "SUM");
        assert_eq!(Operator::If.arity(), Arity::Fixed(3));
    }
}
