package lake

import (
	"net/url"
	"strings"
)

// Redacted replaces a secret in what lakegw shows of its catalog properties
// (logs, /debug/pprof/cmdline).
const Redacted = "[redacted]"

// secretKeyWords mark a catalog property as secret by its key. iceberg-go's
// FileIO and catalog properties name their secrets with one of these
// (s3.secret-access-key, s3.session-token, adls.sas-token, gcs.oauth2.token,
// credential, token, rest.signing-key...); a false positive only hides a
// harmless value, so the rule errs wide.
var secretKeyWords = []string{"secret", "password", "passwd", "token", "credential", "key", "signature", "private"}

// IsSecretProp reports whether the property named key holds a secret.
func IsSecretProp(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// RedactProp returns what may be shown of a property's value: nothing of a
// secret one, and a URL value (a catalog uri, a database DSN) without its
// password.
func RedactProp(key, value string) string {
	if IsSecretProp(key) {
		return Redacted
	}
	if u, err := url.Parse(value); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return value
}

// RedactedProps returns the properties as they may be logged.
func RedactedProps(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = RedactProp(k, v)
	}
	return out
}

// minScrubbedSecret is the shortest secret value SecretValues returns:
// scrubbing every "1" or "abc" out of the logs would garble them, and a
// value that short protects nothing anyway.
const minScrubbedSecret = 4

// SecretValues returns the secret strings among the properties: the values
// of secret keys and the passwords of URL values. Text that may quote them
// (an error from a catalog client, a log line) is scrubbed of these.
func SecretValues(props map[string]string) []string {
	var out []string
	for k, v := range props {
		if len(v) < minScrubbedSecret {
			continue
		}
		if IsSecretProp(k) {
			out = append(out, v)
			continue
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, has := u.User.Password(); has && len(pw) >= minScrubbedSecret {
				out = append(out, pw)
			}
		}
	}
	return out
}
