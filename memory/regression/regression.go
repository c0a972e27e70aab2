// Package regression is the numeric memory system for keyed scalar outcomes that come back task
// after task (docs/learning.md, "The systems", row regression; the Routed Continual Learning paper B.2): sales per store and week, a
// latency per service, a score per team and round. A cluster learns from every outcome its tasks
// reveal and answers the points a new task asks for with a forecast, its uncertainty and the
// number of observations behind it.
//
// # The model
//
// Each distinct outcome i of the bound target, y_i, is first put on the scale of its family's
// link g: identity for real, log for positive, log(y+0.5) for count, and logit for probability
// (the probability clamped to [0.001, 0.999] first). On that scale
//
//	g(y_i) = mu + a[key_i] + sum over factors f of b_f[level_f,i] + beta * (t_i - tbar) + e_i
//
//	a[k]    ~ N(0, tau_a^2)   one effect per level of the key dimension (the series)
//	b_f[l]  ~ N(0, tau_f^2)   one effect per level of each factor, one variance per factor
//	e_i     ~ N(0, sigma^2)   observation noise
//	mu, beta                  flat (unpenalized)
//
// The variance components tau_a^2, tau_f^2 and sigma^2 are not chosen: they are estimated from
// the data by EM iterations for restricted maximum likelihood (REML), so the amount of pooling
// between series is what the data support, never a fixed shrinkage constant. Given the
// variances, with lambda_c = sigma^2 / tau_c^2 and C the design matrix of all effects, the
// effects theta solve the penalized normal equations
//
//	(C'C + Lambda) theta = C'g(y),   Lambda = diag(0 for mu and beta, lambda_c for component c)
//
// and, with M = C'C + Lambda, their posterior covariance is sigma^2 M^-1. One EM step then sets
//
//	tau_c^2 <- (|theta_c|^2 + sigma^2 tr M^-1_cc) / q_c                    (q_c levels)
//	sigma^2 <- (|g(y) - C theta|^2 + sigma^2 tr(M^-1 C'C)) / n             (n outcomes)
//
// and repeats until the variances settle (or the restricted likelihood stops rising). EM is
// slow where a variance heads for zero, so its steps are accelerated by SQUAREM extrapolation,
// each extrapolated point kept only if the likelihood does not drop. The key block of C'C is
// diagonal (an outcome belongs to one series), so the equations are solved through the Schur
// complement of that block with gonum/mat: the cost of a step grows with the number of series,
// not with its cube.
//
// Details that keep the answers sensible at the edges:
//   - the trend beta is fitted only when the outcomes hold at least 3 distinct times, else it
//     is 0; a key or a factor with fewer than 2 observed levels is left out (mu absorbs it);
//   - sigma never falls below a floor set by the resolution of the values as written (a value
//     written with one decimal is uncertain by at least 0.1/sqrt(12)), so a stream of equal
//     values gives that value with a small, nonzero uncertainty; one outcome gives itself;
//   - the same observation seen in several events (same target and same dimensions: a history
//     line repeated in every task) counts once, with the value of the latest event; that is
//     why a batch may state only bound dimensions (an extra one would make the same line a
//     second observation), and every outcome must name its series when a key is bound;
//   - values and times are accepted up to 1e100 in magnitude: the fit squares them and sums
//     the squares, which beyond that could overflow. Should the records still defeat floating
//     point (the Schur complement stays singular after 20 additions to its diagonal, the
//     likelihood is not finite, or a parameter comes out infinite), the cluster keeps its
//     records but holds no fit, and advises nothing, until its records allow one.
//
// # The forecast
//
// For a requested point with design row c (its series, its factor levels, its time), the
// forecast is h(c'theta), h the inverse link, and its spread is the predictive sd through the
// delta method: |h'(c'theta)| sqrt(sigma^2 + c'(sigma^2 M^-1)c + tau_a^2 for an unseen series
// + tau_f^2 for each unseen factor level). A point without a time is forecast at the latest
// time observed. The support of a point is the number of distinct observations of its series
// (of all series when no key is bound); forecasts are rendered only once the cluster holds at
// least 2 observations. Requested points of another quantity get no line.
//
// # Conditioning on the current task
//
// A task often shows outcomes of its own (the last weeks of the store it asks about), and a
// forecast should use them even though they are not ingested until the task ends. Advise
// therefore conditions the fit on the current batch's outcomes that the data does not already
// hold, identified as Ingest identifies them (same target and dimensions; the latest event's
// value wins, so a repeated history line changes nothing and a corrected one replaces the old
// value). It does not refit: the variance components stay as fitted, and the effects that the
// requested points and the shown outcomes involve are updated to their conditional posterior.
// That vector, with mean u and covariance P, holds w (mu, beta and the fitted factor levels)
// and one entry per series and per new factor level involved. Its prior is the fit's
// posterior: the mean and covariance of w, and for a fitted series a[k] its posterior mean,
// variance and covariance with w; two fitted series covary through w as Share_k' Cov(w)
// Share_j (Share_k = b_k / D_k, kept in KeyFit). A series the fit never saw starts at
// N(0, tau_a^2) (a very wide prior, 1e6 sigma^2, when the fit saw one series and so has no
// tau_a), a new factor level at N(0, tau_f^2). Each new
// outcome with row h and value z = g(y) is then a Kalman step with noise sigma^2:
//
//	s = h'Ph + sigma^2,   u <- u + Ph (z - h'u) / s,   P <- P - Ph h'P / s
//
// and a held point whose value changed by dz on the link scale moves the mean by Ph dz / sigma^2
// (its precision is already in P). For one series effect alone, with the rest fixed, this is
// the familiar precision 1/v + n/sigma^2 and mean (a/v + sum of residuals / sigma^2) over that
// precision; updating the whole vector jointly makes the result the exact posterior of a refit
// that kept the variance components. Forecasts then use the updated mean and covariance, the
// latest time includes the shown outcomes, and the support counts them. Only a refit would
// re-estimate the variances or add a term (a trend, a series term) that the new outcomes make
// possible; Ingest does that once the task has ended.
//
// # Where the work happens
//
// Ingest (a background job) appends the batch's outcomes to the raw records and refits from
// scratch; Forget removes one source's records and refits the same way, so the fit depends only
// on the records. Data keeps the raw records, the bindings and the fitted parameters, so Advise,
// on the request path at a task's start, evaluates the stored fit and conditions it on the
// current outcomes: a scan of the records for the points the task repeats, and a few small
// dense updates.
package regression

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// Operator is the versioned name of the runtime the adapter and extractor are told about.
const Operator = "hierarchical_regression_v1"

// The target families and their links.
const (
	Real        = "real"        // identity link
	Positive    = "positive"    // log link
	Count       = "count"       // log(y+0.5)
	Probability = "probability" // logit link
)

// Families lists the families a binding may choose.
var Families = []string{Real, Positive, Count, Probability}

var _ numeric.Runtime[Bindings, Batch, Data] = Runtime{}

// Runtime is the hierarchical regression runtime. It holds no state: everything a cluster
// learned is in its Data.
type Runtime struct{}

// Bindings is what the adapter chooses for a cluster: which quantity is forecast and which of
// its dimensions play which role.
type Bindings struct {
	// Target is the quantity's name, as the events write it.
	Target string `json:"target"`
	// Key is the dimension whose value names a series ("" when there is none).
	Key string `json:"key"`
	// Time is the dimension holding a numeric time ("" when time plays no role).
	Time string `json:"time"`
	// Factors are further categorical dimensions shared across series.
	Factors []string `json:"factors"`
	// Family is one of Families; it fixes the link.
	Family string `json:"family"`
}

// Batch is one event's extraction: the points it asks for and the outcomes it reveals.
type Batch struct {
	Requested []numeric.Key `json:"requested"`
	Outcomes  []Outcome     `json:"outcomes"`
}

// Outcome is one realized value of the target at a point.
type Outcome struct {
	Target string            `json:"target"`
	Dims   map[string]string `json:"dims"`
	Value  numeric.Number    `json:"value"`
}

// Name returns "regression".
func (Runtime) Name() string { return Name }

// Description says what the system learns and when the router should choose it.
func (Runtime) Description() string {
	return "Keeps the numeric outcomes that tasks reveal for keyed quantities (a value per store, per service, per week...) " +
		"and pools them in a hierarchical regression with series, factor and trend terms. A task that asks for such a " +
		"value gets a forecast with its uncertainty and the number of observations behind it. Choose it when tasks ask " +
		"to estimate a number that earlier tasks measured or revealed for the same or related keys."
}

// Operator returns Operator.
func (Runtime) Operator() string { return Operator }

// AdapterContract explains the roles a binding assigns.
func (Runtime) AdapterContract() string {
	return strings.Join([]string{
		"This runtime forecasts one numeric quantity that is measured again and again under named dimensions,",
		"like a quantity written sales[store=north,week=11]. Bind:",
		"- target: the name of the quantity to forecast, exactly as the events write it.",
		"- key: the dimension whose value names one series (a store, a service, a team); \"\" if the quantity has no such dimension.",
		"- time: the dimension whose values are numeric times (a week or day number); \"\" if there is none or it is not a number.",
		"- factors: the other categorical dimensions of the quantity, which several series may share (a region, a channel); [] if none.",
		"- family: real for any number, positive for amounts that are always above zero, count for whole numbers",
		"  of zero or more, probability for shares between 0 and 1.",
		"Every dimension takes at most one role, and every name must appear in the events as written.",
		"Give no priors, trends, noise levels or amounts of pooling: the runtime fits all of them from the outcomes.",
	}, "\n")
}

// BindingsSchema is the JSON schema of Bindings.
func (Runtime) BindingsSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,` +
		`"required":["target","key","time","factors","family"],"properties":{` +
		`"target":{"type":"string","description":"the name of the quantity to forecast"},` +
		`"key":{"type":"string","description":"the dimension naming a series, or empty"},` +
		`"time":{"type":"string","description":"the dimension holding a numeric time, or empty"},` +
		`"factors":{"type":"array","items":{"type":"string"},"description":"other categorical dimensions"},` +
		`"family":{"type":"string","enum":["real","positive","count","probability"]}}}`)
}

// ExtractorContract explains which records to emit under b.
func (Runtime) ExtractorContract(b *Bindings) string {
	dims := boundDims(b)
	names := "no dimensions"
	if len(dims) > 0 {
		names = "the dimensions " + strings.Join(dims, ", ")
	}
	return strings.Join([]string{
		fmt.Sprintf("The quantity is %s, with %s (null for a dimension the event does not give).", b.Target, names),
		fmt.Sprintf("- requested: every point of %s that the event asks to be estimated or predicted, with its dimensions.", b.Target),
		fmt.Sprintf("- outcomes: every value of %s that the event reveals as measured or as the true result, with its dimensions", b.Target),
		"  and the value. A guess, an answer given, an error or a score is not an outcome.",
		"Copy names and values character for character as the event writes them; time values are numbers.",
		"Use empty lists when the event requests or reveals nothing.",
	}, "\n")
}

// BatchSchema is the JSON schema of a Batch under b: the dimensions are the bound ones.
func (Runtime) BatchSchema(b *Bindings) json.RawMessage {
	dims := boundDims(b)
	props := make([]string, len(dims))
	for i, d := range dims {
		props[i] = fmt.Sprintf("%q:{\"type\":[\"string\",\"null\"]}", d)
	}
	required, _ := json.Marshal(dims)
	dimsSchema := `{"type":"object","additionalProperties":false,"required":` + string(required) +
		`,"properties":{` + strings.Join(props, ",") + `}}`
	point := `{"type":"object","additionalProperties":false,"required":["target","dims"],"properties":{` +
		`"target":{"type":"string"},"dims":` + dimsSchema + `}}`
	outcome := `{"type":"object","additionalProperties":false,"required":["target","dims","value"],"properties":{` +
		`"target":{"type":"string"},"dims":` + dimsSchema + `,"value":{"type":"number"}}}`
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["requested","outcomes"],"properties":{` +
		`"requested":{"type":"array","items":` + point + `},"outcomes":{"type":"array","items":` + outcome + `}}}`)
}

// boundDims lists b's dimensions in role order: key, time, factors.
func boundDims(b *Bindings) []string {
	dims := []string{}
	for _, d := range append([]string{b.Key, b.Time}, b.Factors...) {
		if d != "" {
			dims = append(dims, d)
		}
	}
	return dims
}

// present returns dims without the dimensions whose value is empty (a null in the extraction).
func present(dims map[string]string) map[string]string {
	out := make(map[string]string, len(dims))
	for n, v := range dims {
		if v != "" {
			out[n] = v
		}
	}
	return out
}
