/*
Package client for aws-sdk-go-v2
This package provides the methods to create a fake Dynamodb client
for aws-sdk-go-v2 library.
*/
package client
