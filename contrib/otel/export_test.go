package otel

var StatusCodeForTest = statusCode
