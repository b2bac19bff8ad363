// The package ships no types; prometheus-text.ts gives its result a shape.
declare module 'parse-prometheus-text-format' {
  const parsePrometheusTextFormat: (text: string) => unknown;
  export default parsePrometheusTextFormat;
}
