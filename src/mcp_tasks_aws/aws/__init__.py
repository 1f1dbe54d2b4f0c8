"""AWS adapters: the only code that imports boto3 (DynamoDB, Step Functions, S3)."""
