//! The applied properties: for each key, how its value is read from text (checked on
//! its own; checks across keys are [`YcsbSpec`]'s) and written back; and the readers of
//! numbers, booleans and prefixes, as YCSB (Java) reads them.

use super::{CORE_WORKLOAD_CLASSES, InsertOrder, RequestDistribution, ScanLengthDistribution, YcsbSpec};
use crate::limits::{
    FIELD_COUNT_MAX, FIELD_LENGTH_MAX_BYTES, OPERATION_COUNT_MAX, PREFIX_MAX_BYTES, RECORD_COUNT_MAX, SCAN_LENGTH_MAX,
    ZERO_PADDING_MAX, ZIPF_EXPONENT_MAX,
};
use crate::ycsb::field_length::FieldLengthDistribution;

/// One applied key: how to set it from text (checking the value alone) and how to
/// write it back.
pub(super) struct Property {
    pub(super) key: &'static str,
    pub(super) set: fn(&mut YcsbSpec, &str) -> Result<(), String>,
    pub(super) get: fn(&YcsbSpec) -> Option<String>,
}

/// Every applied key, in the order [`YcsbSpec::to_properties`] writes them.
pub(super) const PROPERTIES: &[Property] = &[
    Property {
        key: "workload",
        set: |_, v| {
            if CORE_WORKLOAD_CLASSES.contains(&v) {
                Ok(())
            } else {
                Err(format!("only YCSB's core workload is implemented ({})", CORE_WORKLOAD_CLASSES[0]))
            }
        },
        get: |_| Some(CORE_WORKLOAD_CLASSES[0].to_owned()),
    },
    Property {
        key: "recordcount",
        set: |s, v| parse_u64(v, 1, RECORD_COUNT_MAX).map(|x| s.record_count = x),
        get: |s| Some(s.record_count.to_string()),
    },
    Property {
        key: "operationcount",
        set: |s, v| parse_u64(v, 0, OPERATION_COUNT_MAX).map(|x| s.operation_count = x),
        get: |s| Some(s.operation_count.to_string()),
    },
    Property {
        key: "fieldcount",
        set: |s, v| parse_u32(v, 1, FIELD_COUNT_MAX).map(|x| s.field_count = x),
        get: |s| Some(s.field_count.to_string()),
    },
    Property {
        key: "fieldlength",
        set: |s, v| parse_u32(v, 1, FIELD_LENGTH_MAX_BYTES).map(|x| s.field_length_bytes = x),
        get: |s| Some(s.field_length_bytes.to_string()),
    },
    Property {
        key: "minfieldlength",
        set: |s, v| parse_u32(v, 0, FIELD_LENGTH_MAX_BYTES).map(|x| s.field_length_min_bytes = x),
        get: |s| Some(s.field_length_min_bytes.to_string()),
    },
    Property {
        key: "fieldlengthdistribution",
        set: |s, v| {
            s.field_length_distribution = match v {
                "constant" => FieldLengthDistribution::Constant,
                "uniform" => FieldLengthDistribution::Uniform,
                "zipfian" => FieldLengthDistribution::Zipfian,
                "histogram" => FieldLengthDistribution::Histogram,
                _ => return Err("expected constant, uniform, zipfian or histogram".to_owned()),
            };
            Ok(())
        },
        get: |s| Some(s.field_length_distribution.name().to_owned()),
    },
    Property {
        key: "fieldlengthhistogram",
        set: |s, v| {
            if v.is_empty() {
                return Err("expected the path of a histogram file".to_owned());
            }
            s.field_length_histogram_file = v.to_owned();
            Ok(())
        },
        get: |s| Some(s.field_length_histogram_file.clone()),
    },
    Property {
        key: "fieldnameprefix",
        set: |s, v| parse_prefix(v).map(|x| s.field_name_prefix = x),
        get: |s| Some(s.field_name_prefix.clone()),
    },
    Property {
        key: "readallfields",
        set: |s, v| parse_bool(v).map(|x| s.read_all_fields = x),
        get: |s| Some(s.read_all_fields.to_string()),
    },
    Property {
        key: "writeallfields",
        set: |s, v| parse_bool(v).map(|x| s.write_all_fields = x),
        get: |s| Some(s.write_all_fields.to_string()),
    },
    Property {
        key: "dataintegrity",
        set: |s, v| parse_bool(v).map(|x| s.data_integrity = x),
        get: |s| Some(s.data_integrity.to_string()),
    },
    Property {
        key: "readproportion",
        set: |s, v| parse_fraction(v).map(|x| s.read_proportion = x),
        get: |s| Some(s.read_proportion.to_string()),
    },
    Property {
        key: "updateproportion",
        set: |s, v| parse_fraction(v).map(|x| s.update_proportion = x),
        get: |s| Some(s.update_proportion.to_string()),
    },
    Property {
        key: "insertproportion",
        set: |s, v| parse_fraction(v).map(|x| s.insert_proportion = x),
        get: |s| Some(s.insert_proportion.to_string()),
    },
    Property {
        key: "scanproportion",
        set: |s, v| parse_fraction(v).map(|x| s.scan_proportion = x),
        get: |s| Some(s.scan_proportion.to_string()),
    },
    Property {
        key: "readmodifywriteproportion",
        set: |s, v| parse_fraction(v).map(|x| s.read_modify_write_proportion = x),
        get: |s| Some(s.read_modify_write_proportion.to_string()),
    },
    Property {
        key: "requestdistribution",
        set: |s, v| {
            s.request_distribution = match v {
                "uniform" => RequestDistribution::Uniform,
                "zipfian" => RequestDistribution::Zipfian,
                "latest" => RequestDistribution::Latest,
                "hotspot" => RequestDistribution::Hotspot,
                "sequential" => RequestDistribution::Sequential,
                "exponential" => RequestDistribution::Exponential,
                _ => return Err("expected uniform, zipfian, latest, hotspot, sequential or exponential".to_owned()),
            };
            Ok(())
        },
        get: |s| Some(s.request_distribution.name().to_owned()),
    },
    Property {
        key: "hotspotdatafraction",
        set: |s, v| parse_fraction(v).map(|x| s.hotspot_data_fraction = x),
        get: |s| Some(s.hotspot_data_fraction.to_string()),
    },
    Property {
        key: "hotspotopnfraction",
        set: |s, v| parse_fraction(v).map(|x| s.hotspot_op_fraction = x),
        get: |s| Some(s.hotspot_op_fraction.to_string()),
    },
    Property {
        key: "exponential.percentile",
        set: |s, v| {
            let p = parse_f64(v)?;
            if !(p > 0.0 && p < 100.0) {
                return Err("must be above 0 and below 100".to_owned());
            }
            s.exponential_percentile = p;
            Ok(())
        },
        get: |s| Some(s.exponential_percentile.to_string()),
    },
    Property {
        key: "exponential.frac",
        set: |s, v| {
            let f = parse_f64(v)?;
            if f <= 0.0 {
                return Err("must be above 0".to_owned());
            }
            s.exponential_frac = f;
            Ok(())
        },
        get: |s| Some(s.exponential_frac.to_string()),
    },
    Property {
        key: "minscanlength",
        set: |s, v| parse_u32(v, 1, SCAN_LENGTH_MAX).map(|x| s.scan_length_min = x),
        get: |s| Some(s.scan_length_min.to_string()),
    },
    Property {
        key: "maxscanlength",
        set: |s, v| parse_u32(v, 1, SCAN_LENGTH_MAX).map(|x| s.scan_length_max = x),
        get: |s| Some(s.scan_length_max.to_string()),
    },
    Property {
        key: "scanlengthdistribution",
        set: |s, v| {
            s.scan_length_distribution = match v {
                "uniform" => ScanLengthDistribution::Uniform,
                "zipfian" => ScanLengthDistribution::Zipfian,
                _ => return Err("expected uniform or zipfian".to_owned()),
            };
            Ok(())
        },
        get: |s| {
            Some(
                match s.scan_length_distribution {
                    ScanLengthDistribution::Uniform => "uniform",
                    ScanLengthDistribution::Zipfian => "zipfian",
                }
                .to_owned(),
            )
        },
    },
    Property {
        key: "insertorder",
        set: |s, v| {
            s.insert_order = match v {
                "hashed" => InsertOrder::Hashed,
                "ordered" => InsertOrder::Ordered,
                _ => return Err("expected hashed or ordered".to_owned()),
            };
            Ok(())
        },
        get: |s| {
            Some(
                match s.insert_order {
                    InsertOrder::Hashed => "hashed",
                    InsertOrder::Ordered => "ordered",
                }
                .to_owned(),
            )
        },
    },
    Property {
        key: "zeropadding",
        set: |s, v| parse_u32(v, 0, ZERO_PADDING_MAX).map(|x| s.zero_padding = x),
        get: |s| Some(s.zero_padding.to_string()),
    },
    Property {
        key: "insertstart",
        set: |s, v| parse_u64(v, 0, RECORD_COUNT_MAX - 1).map(|x| s.insert_start = x),
        get: |s| Some(s.insert_start.to_string()),
    },
    Property {
        key: "insertcount",
        set: |s, v| {
            s.insert_count = parse_u64(v, 1, RECORD_COUNT_MAX)?;
            s.insert_count_given = true;
            Ok(())
        },
        get: |s| s.insert_count_given.then(|| s.insert_count.to_string()),
    },
    Property {
        key: "keyprefix",
        set: |s, v| parse_prefix(v).map(|x| s.key_prefix = x),
        get: |s| Some(s.key_prefix.clone()),
    },
    Property {
        key: "tierdb.zipfianconstant",
        set: |s, v| {
            let c = parse_f64(v)?;
            if !(c > 0.0 && c <= ZIPF_EXPONENT_MAX) {
                return Err(format!("must be above 0 and at most {ZIPF_EXPONENT_MAX}"));
            }
            s.zipfian_constant = c;
            Ok(())
        },
        get: |s| Some(s.zipfian_constant.to_string()),
    },
    Property {
        key: "tierdb.seed",
        set: |s, v| {
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse::<u64>(),
            };
            s.seed = Some(parsed.map_err(|_| "expected an unsigned 64-bit integer, decimal or 0x hex".to_owned())?);
            Ok(())
        },
        get: |s| s.seed.map(|seed| seed.to_string()),
    },
];

/// An unsigned integer in `min..=max`, as Java's `Long.parseLong` reads it (an optional
/// `+`, decimal digits).
fn parse_u64(value: &str, min: u64, max: u64) -> Result<u64, String> {
    let digits = value.strip_prefix('+').unwrap_or(value);
    let parsed = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<u64>().map_err(|_| format!("must be at most {max}"))?
    } else if value.starts_with('-') && value.len() > 1 && value[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err("must not be negative".to_owned());
    } else {
        return Err("expected a whole number".to_owned());
    };
    if parsed < min || parsed > max {
        return Err(format!("must be between {min} and {max}"));
    }
    Ok(parsed)
}

/// An unsigned 32-bit integer in `min..=max`.
fn parse_u32(value: &str, min: u32, max: u32) -> Result<u32, String> {
    // max fits u32, so the conversion cannot fail after the range check.
    parse_u64(value, u64::from(min), u64::from(max)).map(|v| v as u32)
}

/// A finite number, as Java's `Double.parseDouble` reads it: also with a type suffix
/// `d`, `D`, `f` or `F`.
fn parse_f64(value: &str) -> Result<f64, String> {
    let number = value.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(value);
    match number.parse::<f64>() {
        // Rust reads "inf" and "nan" as numbers; Java does not (and they are not finite).
        Ok(v) if v.is_finite() && number.bytes().any(|b| b.is_ascii_digit()) => Ok(v),
        _ => Err("expected a finite number".to_owned()),
    }
}

/// A number in `[0, 1]`.
fn parse_fraction(value: &str) -> Result<f64, String> {
    let v = parse_f64(value)?;
    if (0.0..=1.0).contains(&v) {
        // -0.0 is in range; store +0.0 so that written-back text reads "0".
        Ok(v + 0.0)
    } else {
        Err("must be between 0 and 1".to_owned())
    }
}

/// `true` or `false`, in any case (Java's `Boolean.parseBoolean` takes anything else
/// as false; we reject it).
fn parse_bool(value: &str) -> Result<bool, String> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err("expected true or false".to_owned())
    }
}

/// A key or field name prefix: printable ASCII without spaces, at most
/// [`PREFIX_MAX_BYTES`], possibly empty.
fn parse_prefix(value: &str) -> Result<String, String> {
    if value.len() > PREFIX_MAX_BYTES {
        return Err(format!("longer than {PREFIX_MAX_BYTES} bytes"));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("only printable ASCII characters without spaces are allowed".to_owned());
    }
    Ok(value.to_owned())
}

/// A value written so that property text reads it back unchanged: backslashes and a
/// leading blank escaped (paths may hold either).
pub(super) fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            ' ' if i == 0 => out.push_str("\\ "),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}
