package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// An environment answer is about 100 KB for a real driver (its Hadoop
// properties and classpath), of which discovery needs two arrays of about
// 2 KB. decodeEnvironment finds their bytes with envArrays, a scan that
// skips every other value without decoding it, and reads in those two
// only the pairs it needs (eachPair): 500 drivers found together and a
// History Server's backlog of 10,000 event logs cost a twentieth of
// decoding every document.
//
// The values it skips are checked for terminated strings and matching
// brackets only, not for well-formed literals and numbers: a driver states
// its own ACLs in its environment, so nothing it could slip past the check
// grants more than valid JSON would. Where the document is valid JSON the
// result is encoding/json's (FuzzDecodeEnvironment): keys match as it
// matches field names (bytes.EqualFold), and the last of repeated keys
// wins.

// envNestMax bounds the nesting of a skipped value, as encoding/json does.
const envNestMax = 10000

var errEnvSyntax = errors.New("environment is not a JSON object")

// decodeEnvironment reads the ACL properties and spark.ui.proxyBase from an
// environment answer. The ACLs are Spark properties only, as Spark's
// SecurityManager reads them from SparkConf (a system property that
// SparkConf did not take in, such as one set after start-up, grants
// nothing there); spark.ui.proxyBase, which Spark's UI reads as a system
// property, is either, a Spark property first.
func decodeEnvironment(body []byte) (map[string]string, string, error) {
	sparkRaw, sysRaw, err := envArrays(body)
	if err != nil {
		return nil, "", err
	}
	acl := map[string]string{}
	proxyBase := ""
	scan := func(raw []byte, sys bool) error {
		return eachPair(raw, func(k string, v func() (string, error)) error {
			want := k == "spark.ui.proxyBase" && (proxyBase == "" || !sys)
			if !sys && slices.Contains(aclKeys, k) {
				want = true
			}
			if !want {
				return nil
			}
			val, err := v()
			if err != nil {
				return err
			}
			if k == "spark.ui.proxyBase" {
				proxyBase = val
			} else {
				acl[k] = val
			}
			return nil
		})
	}
	if err := scan(sysRaw, true); err != nil {
		return nil, "", err
	}
	if err := scan(sparkRaw, false); err != nil {
		return nil, "", err
	}
	return acl, strings.TrimRight(proxyBase, "/"), nil
}

var errEnvType = errors.New("environment properties are not [name, value] string pairs")

// eachPair calls f for each element of a JSON array that holds exactly two
// strings (or nulls, read as ""), as encoding/json reads such an array
// into [][]string: null or an empty array holds none, an element of another
// length is passed over, anything but arrays of strings is an error. f
// gets the name, and the value's decoding to call if it needs it. raw is
// a value envArrays delimited (nil: absent).
func eachPair(raw []byte, f func(name string, value func() (string, error)) error) error {
	if raw == nil || isNull(raw, 0) {
		return nil
	}
	if raw[0] != '[' {
		return errEnvType
	}
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return nil
	}
	for i < len(raw) {
		switch {
		case isNull(raw, i):
			i += 4
		case raw[i] == '[':
			var tok [2][]byte
			n := 0
			i = skipSpace(raw, i+1)
			for i < len(raw) && raw[i] != ']' {
				var t []byte
				switch {
				case isNull(raw, i):
					i += 4
				case raw[i] == '"':
					end, err := skipString(raw, i)
					if err != nil {
						return err
					}
					t, i = raw[i:end], end
				default:
					return errEnvType
				}
				if n < 2 {
					tok[n] = t
				}
				n++
				i = skipSpace(raw, i)
				if i < len(raw) && raw[i] == ',' {
					i = skipSpace(raw, i+1)
				} else if i >= len(raw) || raw[i] != ']' {
					return errEnvSyntax
				}
			}
			if i >= len(raw) {
				return errEnvSyntax
			}
			i++ // the pair's ']'
			if n == 2 {
				name, err := tokenString(tok[0])
				if err != nil {
					return err
				}
				if err := f(name, func() (string, error) { return tokenString(tok[1]) }); err != nil {
					return err
				}
			}
		default:
			return errEnvType
		}
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == ']' && skipSpace(raw, i+1) == len(raw) {
			return nil
		}
		return errEnvSyntax
	}
	return errEnvSyntax
}

// isNull reports whether the literal null starts at b[i].
func isNull(b []byte, i int) bool { return bytes.HasPrefix(b[i:], []byte("null")) }

// tokenString is the string a JSON string token (quotes included) holds,
// "" for nil (null); escapes and invalid UTF-8 are left to encoding/json.
func tokenString(tok []byte) (string, error) {
	if tok == nil {
		return "", nil
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return s, nil
}

var (
	keySparkProps  = []byte("sparkProperties")
	keySystemProps = []byte("systemProperties")
)

// envArrays returns the raw values of the top-level keys sparkProperties
// and systemProperties of a JSON object (nil where absent).
func envArrays(b []byte) (spark, system []byte, err error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, errEnvSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return nil, nil, errEnvSyntax
			}
			end, err := skipString(b, i)
			if err != nil {
				return nil, nil, err
			}
			key := b[i+1 : end-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				var k string
				if json.Unmarshal(b[i:end], &k) != nil {
					return nil, nil, errEnvSyntax
				}
				key = []byte(k)
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return nil, nil, errEnvSyntax
			}
			i = skipSpace(b, i+1)
			vend, err := skipValue(b, i)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case bytes.EqualFold(key, keySparkProps):
				spark = b[i:vend]
			case bytes.EqualFold(key, keySystemProps):
				system = b[i:vend]
			}
			i = skipSpace(b, vend)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, nil, errEnvSyntax
		}
	}
	if skipSpace(b, i) != len(b) {
		return nil, nil, errEnvSyntax
	}
	return spark, system, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errEnvSyntax
		}
		j += k
		// An escaped quote follows an odd number of backslashes.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j, nil
		}
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errEnvSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var buf [64]byte
		open := buf[:0] // the closing bracket each open one wants
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				if len(open) == envNestMax {
					return 0, errEnvSyntax
				}
				open = append(open, c+2) // '}' is '{'+2, ']' is '['+2
			case '}', ']':
				if len(open) == 0 || open[len(open)-1] != c {
					return 0, errEnvSyntax
				}
				open = open[:len(open)-1]
				if len(open) == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errEnvSyntax
	default: // a number or literal, up to the next delimiter
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",}] \n\r\t"), rune(b[j])) {
			j++
		}
		if j == i {
			return 0, errEnvSyntax
		}
		return j, nil
	}
}
